"""VNG files written by the real Zed ``zq`` (v1.7.0 and v1.12.0) read exactly.

The files, and zq's JSON of each, are committed under ``tests/data/real/`` (its
README has the commands), so this runs without the binaries: every value equals
what zq prints, every type equals the one zq's ZNG of the same input carries,
through whole reads, projections, batches and row selections.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import csup_async
from csup_async import CsupError
from csup_async.format.bsup import encode_stream, read_values
from csup_async.format.csup import find_trailer
from csup_async.format.meta import PrimitiveColumn, RecordColumn
from csup_async.format.vng import parse_metadata
from planner.filters import col
from tests.support.vngolder import as_release
from tests.support.zedjson import load_lines, zed_json

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "data" / "real"

# (file, zq's JSON of it, zq v1.7 prints maps as key/value records, writer line)
CASES = [
    ("zed1.12-all.vng", "zed1.12-all.json", False, "Zed v1.12 (VNG version 3)"),
    ("zed1.7-all.vng", "zed1.7-all.json", True, "Zed v1.5-v1.8 (VNG version 3)"),
    ("zed1.12-long.vng", "zed1.12-long.json", False, "Zed v1.12 (VNG version 3)"),
    ("zed1.7-long.vng", "zed1.12-long.json", True, "Zed v1.5-v1.8 (VNG version 3)"),
    # errors of records and arrays: whole bodies in a "primitive" column (v1.12: as
    # dictionaries and a constant)
    ("zed1.12-errors.vng", "zed1.12-errors.json", False, "Zed v1.12 (VNG version 3)"),
    ("zed1.7-errors.vng", "zed1.12-errors.json", True, "Zed v1.5-v1.8 (VNG version 3)"),
    # no values: a trailer and an empty root segmap, whose Segment type still tells
    ("zed1.12-empty.vng", "zed1.12-empty.json", False, "Zed v1.12 (VNG version 3)"),
    ("zed1.7-empty.vng", "zed1.12-empty.json", True, "Zed v1.5-v1.11 (VNG version 3)"),
]


def _json(values: list, map_as_records: bool) -> list:
    return [zed_json(v.type, v.value, map_as_records=map_as_records) for v in values]


async def _values(name: str) -> list:
    async with csup_async.open(str(REAL / name)) as r:
        return await r.read_values()


@pytest.mark.parametrize(("name", "expected", "map_as_records", "writer"), CASES)
async def test_every_value_as_zq_prints_it(name: str, expected: str, map_as_records: bool,
                                           writer: str) -> None:
    got = _json(await _values(name), map_as_records)
    want = load_lines(REAL / expected)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, f"value {i}"


@pytest.mark.parametrize("version", ["1.12", "1.7"])
async def test_types_equal_those_of_zqs_zng_of_the_same_input(version: str) -> None:
    vng = await _values(f"zed{version}-all.vng")
    zng = read_values((REAL / f"zed{version}-all.zng").read_bytes())
    assert [v.type for v in vng] == [v.type for v in zng]
    assert len({v.type for v in vng}) > 100  # nulls of every kind make many super types


@pytest.mark.parametrize(("name", "expected", "map_as_records", "writer"), CASES)
def test_inspect_names_the_writer_and_verify_passes(name: str, expected: str,
                                                    map_as_records: bool, writer: str) -> None:
    """``--verify`` decodes every segment as its encoding says (dictionary selectors,
    whole bodies of errors of records, tag-encoded values)."""
    out = subprocess.run([sys.executable, "-m", "csup_async.cli", "inspect", "--verify",
                          str(REAL / name)], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout
    assert f"writer: {writer}" in out
    assert "type='vng' version=3" in out
    assert f"verify: {REAL / name}: ok" in out


def test_v112_dictionaries_and_constants_become_primitive_columns() -> None:
    data = (REAL / "zed1.12-long.vng").read_bytes()
    trailer = find_trailer(data[-4096:], len(data))
    meta, info = parse_metadata(data[trailer.data_size:trailer.data_size
                                     + trailer.reassembly_size], trailer, len(data))
    assert info.versions == "v1.12"
    rec = meta.columns[0]
    assert isinstance(rec, RecordColumn)
    grp = rec.field("grp")
    assert grp is not None and isinstance(grp.column, PrimitiveColumn)
    assert grp.column.dictionary is not None and len(grp.column.dictionary) == 5
    inner = rec.field("rec")
    assert inner is not None and isinstance(inner.column, RecordColumn)
    k = inner.column.field("k")
    assert k is not None and isinstance(k.column, PrimitiveColumn)
    assert k.column.constant is not None and k.column.constant.count == 1500
    assert k.column.segmap == ()


@pytest.mark.parametrize("name", ["zed1.12-long.vng", "zed1.7-long.vng"])
async def test_projection_batches_and_row_selection(name: str) -> None:
    want = load_lines(REAL / "zed1.12-long.json")
    async with csup_async.open(str(REAL / name)) as r:
        got = (await r.scan(["grp", "rec.k", "v"])).to_pylist()
        assert got == [{"grp": w["grp"], "rec.k": w["rec"]["k"], "v": w["v"]} for w in want]
        rows = []
        async for b in r.iter_batches(["id", "tags", "rec.a"], batch_rows=97):
            rows += b.to_pylist()
        assert rows == [{"id": w["id"], "tags": w["tags"], "rec.a": w["rec"]["a"]}
                        for w in want]
        picked = [3, 4, 700, 1499]
        taken = (await r.take(picked, ["id", "grp", "rec.k"])).to_pylist()
        assert taken == [{"id": want[i]["id"], "grp": want[i]["grp"],
                          "rec.k": want[i]["rec"]["k"]} for i in picked]
        assert r.num_rows == 1500


async def test_dictionary_selector_out_of_range_is_a_format_error(tmp_path: Path) -> None:
    data = bytearray((REAL / "zed1.12-all.vng").read_bytes())
    trailer = find_trailer(bytes(data[-4096:]), len(data))
    meta, _ = parse_metadata(bytes(data[trailer.data_size:trailer.data_size
                                        + trailer.reassembly_size]), trailer, len(data))
    rec = meta.columns[0]
    assert isinstance(rec, RecordColumn)
    u8 = rec.field("u8")
    assert u8 is not None and isinstance(u8.column, PrimitiveColumn)
    assert u8.column.dictionary is not None
    seg = u8.column.segmap[0]
    assert seg.compression == 0  # a selector byte per value, stored as is
    data[seg.offset] = 200
    bad = tmp_path / "bad.vng"
    bad.write_bytes(bytes(data))
    async with csup_async.open(str(bad)) as r:
        with pytest.raises(CsupError, match="dictionary selector 200 is out of range"):
            await r.scan(["u8"])


async def test_truncated_vng_is_a_clear_error(tmp_path: Path) -> None:
    data = (REAL / "zed1.7-long.vng").read_bytes()
    cut = tmp_path / "cut.vng"
    cut.write_bytes(data[:-40])
    with pytest.raises(CsupError, match="trailer"):
        async with csup_async.open(str(cut)) as r:
            await r.read_values()


# Older releases' structs, on real files re-laid out (tests/support/vngolder.py): v1.4's
# Segment{Offset, Length} with every segment stored as is; v1.9-v1.11's without Count.
OLDER = [
    ("zed1.7-long.vng", "zed1.12-long.json", True, "v1.4", "Zed v1.4 (VNG version 3)"),
    ("zed1.7-all.vng", "zed1.7-all.json", True, "v1.4", "Zed v1.4 (VNG version 3)"),
    ("zed1.12-long.vng", "zed1.12-long.json", False, "v1.9", "Zed v1.9-v1.11 (VNG version 3)"),
    ("zed1.12-errors.vng", "zed1.12-errors.json", False, "v1.9",
     "Zed v1.9-v1.11 (VNG version 3)"),
]


@pytest.mark.parametrize(("name", "expected", "map_as_records", "release", "writer"), OLDER)
async def test_older_releases_structs(tmp_path: Path, name: str, expected: str,
                                      map_as_records: bool, release: str, writer: str) -> None:
    path = tmp_path / f"{release}.vng"
    path.write_bytes(as_release((REAL / name).read_bytes(), release))
    async with csup_async.open(str(path)) as r:
        assert r.meta.writer == writer
        values = await r.read_values()
    assert _json(values, map_as_records) == load_lines(REAL / expected)


@pytest.mark.parametrize(("name", "prunes"), [("zed1.12-long.vng", True),
                                              ("zed1.7-long.vng", False)])
async def test_filters_prune_by_v112_column_bounds(name: str, prunes: bool) -> None:
    """v1.12's ``Primitive{Min, Max, Nulls}`` (one segment per column) prune like CSUP
    segment statistics; v1.7 has none, so it reads and filters."""
    want = load_lines(REAL / "zed1.12-long.json")
    cases = [(col("id") > 5000, lambda w: w["id"] > 5000),
             (col("grp") == "zz", lambda w: w["grp"] == "zz"),
             (col("id") >= 1490, lambda w: w["id"] >= 1490),
             (col("rec.a") == 3, lambda w: w["rec"]["a"] == 3)]
    async with csup_async.open(str(REAL / name)) as r:
        for expr, keep in cases:
            res = await r.scan(["id", "grp"], filter=expr)
            assert res.to_pylist() == [{"id": w["id"], "grp": w["grp"]} for w in want
                                       if keep(w)], expr
            if not any(keep(w) for w in want):
                assert (res.stats.bytes_needed == 0) == prunes, expr


async def test_zst_trailer_is_refused_by_name(tmp_path: Path) -> None:
    """Zed v1.0-v1.3's ``zst`` (version 2) is another design: refused, saying so."""
    data = (REAL / "zed1.7-long.vng").read_bytes()
    trailer = find_trailer(data[-4096:], len(data))
    start = len(data) - trailer.size
    (tv,) = read_values(data[start:])
    zst = dict(tv.value, type="zst", version=2)
    path = tmp_path / "old.zst"
    path.write_bytes(data[:start] + encode_stream([(tv.type, zst)]))
    with pytest.raises(CsupError, match="type 'zst' version 2 is not a VNG version 3"):
        async with csup_async.open(str(path)) as r:
            await r.read_values()
