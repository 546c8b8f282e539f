"""A map column without ``lengths`` (the specification's own map layout, which cannot be
decoded) is refused with an error that points at documentation inside the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

import csup_async
from csup_async import FormatError
from csup_async.format import bsup
from csup_async.format.colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value, segmap_value
from csup_async.format.csup import find_trailer, parse_reassembly
from csup_async.format.meta import MapColumn
from csup_async.model.types import RecordType
from tests.support.paths import ROOT

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _without_map_lengths(data: bytes) -> bytes:
    """The same file with its top-level map column re-encoded without ``lengths``."""
    t = find_trailer(data[-4096:], len(data))
    meta = parse_reassembly(data[t.data_size : t.data_size + t.reassembly_size], t, len(data))
    (col,) = meta.columns
    assert isinstance(col, MapColumn)
    ctype, cvalue = column_value(col)
    assert isinstance(ctype, RecordType)
    ctype = RecordType(tuple(f for f in ctype.fields if f.name != "lengths"))
    cvalue = {k: v for k, v in cvalue.items() if k != "lengths"}
    out = bytearray(data[: t.data_size])
    enc = bsup.StreamEncoder(out)
    for st in meta.super_types:
        enc.write_body(st, None)
    enc.write(SEGMAP_TYPE, segmap_value(tuple(meta.super_column)))
    enc.write(ctype, cvalue)
    enc.end_stream()
    tenc = bsup.StreamEncoder(out, compress=False)
    tenc.write(TRAILER_TYPE, {"magic": "super columnar", "type": "csup", "version": 1,
                              "sections": [t.data_size, len(out) - t.data_size],
                              "meta": {"skew_thresh": 1 << 26, "segment_thresh": 1 << 20}})
    tenc.end_stream()
    return bytes(out)


async def test_map_without_lengths_names_the_docs(tmp_path: Path) -> None:
    good = tmp_path / "map.csup"
    csup_async.write(good, [{1: "a", 2: "b"}, {3: "c"}])
    async with csup_async.open(str(good)) as reader:  # the file as written reads
        assert await reader.read_rows() == [{1: "a", 2: "b"}, {3: "c"}]
    bad = tmp_path / "seed-map.csup"
    bad.write_bytes(_without_map_lengths(good.read_bytes()))
    with pytest.raises(FormatError, match="no lengths") as info:
        async with csup_async.open(str(bad)) as reader:
            await reader.read_rows()
    message = str(info.value)
    assert "seed-map.csup" in message and "docs/format.md" in message
    assert "CSUP-DECISIONS" not in message
    assert "## Column kinds" in (ROOT / "docs" / "format.md").read_text()
