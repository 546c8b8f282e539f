"""``csup_async.open`` reads BSUP version 5, as super main (492eab8) writes it with
``super -f bsup``: the committed ``NAME.bsup`` of ``tests/data/real/super-main/`` read
through the public paths (``open_sync``, ``scan``, the CLI's ``cat``) and compared with
what ``super -j`` printed for the same values (``NAME.json.out``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import csup_async
from csup_async import CsupError
from csup_async.cli import main
from tests.support.superjson import super_json

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super-main"
#: ``fusion`` and ``json`` hold fusion-typed values in super's BSUP, which ``super -j``
#: prints as their subtypes (tests/unit/readers/test_v23_real_files.py's ``defused``).
NAMES = sorted(p.stem for p in DATA.glob("*.bsup") if p.stem not in ("fusion", "json"))


def _printed(name: str) -> list[object]:
    return [json.loads(line) for line in (DATA / f"{name}.json.out").read_text().splitlines()]


def test_the_corpus_is_there() -> None:
    assert {"optional", "unions", "recursive", "anyfuse", "named", "parts"} <= set(NAMES)
    assert (DATA / "optional.bsup").read_bytes()[:1] == b"\x85"  # version 5 frames


@pytest.mark.parametrize("name", NAMES)
def test_values_print_as_super_j(name: str) -> None:
    r = csup_async.open_sync(str(DATA / f"{name}.bsup"))
    got = [super_json(v.type, v.value, main=True) for v in r.read_values()]
    assert got == _printed(name)


def test_rows_and_scan_of_optional_fields() -> None:
    """An absent optional field (``none``) is left out of its row, and null in its
    column."""
    r = csup_async.open_sync(str(DATA / "optional.bsup"))
    rows = r.read_rows()
    assert rows == _printed("optional")
    res = r.scan(["x", "y", "z"])
    assert res.num_rows == len(rows)
    for col in ("x", "y", "z"):
        assert res.columns[col].to_pylist() == [row.get(col) for row in rows]


@pytest.mark.parametrize("name", ["optional", "unions", "enum", "named", "mixed"])
def test_cli_cat_prints_what_super_j_prints(name: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cat", str(DATA / f"{name}.bsup")]) == 0
    out = capsys.readouterr().out
    assert out == (DATA / f"{name}.json.out").read_text()


def test_recursive_types_are_values_not_columns() -> None:
    r = csup_async.open_sync(str(DATA / "recursive.bsup"))
    assert r.read_rows() == _printed("recursive")
    with pytest.raises(CsupError, match=r"recursive\.bsup: .*no array form"):
        r.scan()


@pytest.mark.parametrize("name", ["optional", "unions", "nested", "named"])
def test_cut_or_flipped_streams_fail_naming_the_path(name: str, tmp_path: Path) -> None:
    """A truncated or corrupt version-5 stream is a CsupError naming the file (or, a
    flip landing in a value's bytes, another reading), never another exception."""
    data = (DATA / f"{name}.bsup").read_bytes()
    rng = random.Random(name)
    cases = [data[:cut] for cut in range(1, len(data), max(1, len(data) // 40))]
    for _ in range(40):
        b = bytearray(data)
        b[rng.randrange(1, len(b))] ^= 1 << rng.randrange(8)
        cases.append(bytes(b))
    failed = 0
    for i, case in enumerate(cases):
        p = tmp_path / f"bad-{i}.bsup"
        p.write_bytes(case)
        try:
            r = csup_async.open_sync(str(p))
            r.read_values()
            r.scan()
        except CsupError as e:
            assert p.name in str(e), e
            failed += 1
    assert failed >= 40  # the cuts at least


def test_frames_already_read_are_held_as_version_5() -> None:
    """A reader over frames an earlier open read (the datasets' path) reads them alike."""
    import asyncio

    from csup_async.readers.bsup import reader_of_frames

    async def go() -> tuple[list[object], list[object], list[object]]:
        async with csup_async.open(str(DATA / "optional.bsup")) as r:
            again = reader_of_frames(r.store, r.key, r.frames)
            return (await r.read_rows(), await again.read_rows(),
                    (await again.scan(["x"])).columns["x"].to_pylist())

    first, again, xs = asyncio.run(go())
    assert again == first == _printed("optional")
    assert xs == [row.get("x") for row in first]
