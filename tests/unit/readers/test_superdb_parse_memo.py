"""A SuperDB v0.2/v0.3 file opened again takes the metadata this process parsed from the
same bytes of the same path (readers.parsememo, as the trailer layout does), and reads
the same; other bytes at that path are parsed anew."""

from __future__ import annotations

import shutil
from pathlib import Path

import csup_async
from csup_async.readers.parsememo import parse_memo

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super"


def test_a_second_open_reuses_the_parse_and_reads_the_same(tmp_path: Path) -> None:
    p = tmp_path / "f.csup"
    shutil.copy(DATA / "objects.csup", p)
    first = csup_async.read(str(p)).to_arrow()
    hits = parse_memo().hits
    again = csup_async.read(str(p)).to_arrow()
    assert parse_memo().hits > hits
    assert again.equals(first)


def test_other_bytes_at_the_same_path_are_parsed_anew(tmp_path: Path) -> None:
    p = tmp_path / "f.csup"
    shutil.copy(DATA / "objects.csup", p)
    a = csup_async.read(str(p)).to_arrow()
    shutil.copy(DATA / "nested.csup", p)
    b = csup_async.read(str(p)).to_arrow()
    assert b.equals(csup_async.read(str(DATA / "nested.csup")).to_arrow())
    assert not b.equals(a)
