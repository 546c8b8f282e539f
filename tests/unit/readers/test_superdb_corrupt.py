"""Damaged SuperDB files: a CsupError that names the file, never another exception,
a hang or a huge allocation."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model.errors import CsupError, FormatError, TruncatedError

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super"
FILES = {n: (DATA / f"{n}.csup").read_bytes() for n in ("primitives", "nested", "nulls")}


async def _read_all(path: str) -> None:
    async with csup_async.open(path) as r:
        await r.read_rows()
        await r.scan()
        await r.read_values()


def _read(tmp_path: Path, data: bytes, name: str = "bad.csup") -> None:
    p = tmp_path / name
    p.write_bytes(data)
    asyncio.run(_read_all(str(p)))


def test_truncated_file_names_the_file(tmp_path):
    data = FILES["nested"]
    with pytest.raises(TruncatedError, match=r"cut\.csup.*truncated"):
        _read(tmp_path, data[:-10], "cut.csup")


def test_unknown_header_version(tmp_path):
    data = bytearray(FILES["nulls"])
    struct.pack_into("<I", data, 4, 12)  # super v0.1.0's version number
    with pytest.raises(FormatError, match=r"v12\.csup.*version 12.*super v0\.1\.0"):
        _read(tmp_path, bytes(data), "v12.csup")
    struct.pack_into("<I", data, 4, 15)
    with pytest.raises(FormatError, match=r"version 15 .*reads versions 14 .*, 16 "):
        _read(tmp_path, bytes(data), "v15.csup")


def test_metadata_that_is_not_bsup(tmp_path):
    data = bytearray(FILES["nulls"])
    data[36] = 0x00  # the first frame's version byte
    with pytest.raises(FormatError, match="BSUP frame version"):
        _read(tmp_path, bytes(data))


def test_trailing_garbage_after_the_last_object(tmp_path):
    with pytest.raises(CsupError, match=r"(no CSUP object header|cut short).* at byte 2938"):
        _read(tmp_path, FILES["nulls"] + b"junk-junk-junk-junk-junk-junk-junk-junk-junk")


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(FILES)), st.data())
def test_damaged_bytes_give_csup_errors(tmp_path, name, data):
    raw = bytearray(FILES[name])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    try:
        _read(tmp_path, bytes(raw))
    except CsupError as e:
        assert "bad.csup" in str(e)


def test_a_file_claiming_more_rows_than_max_rows(tmp_path):
    p = tmp_path / "o.csup"
    p.write_bytes((DATA / "objects.csup").read_bytes())

    async def go():
        async with csup_async.open(str(p), max_rows=100_000):
            pass

    with pytest.raises(csup_async.LimitError, match=r"o\.csup.*250,000 rows"):
        asyncio.run(go())
