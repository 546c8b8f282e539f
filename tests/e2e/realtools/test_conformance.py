"""Conformance: SuperDB's and Zed's own ztest inputs, written by each real writer (super
main, v0.3.0, v0.2.0; zq v1.12.0, v1.7.0), read by csup-async and judged type for type
by the tool that wrote them (``tests/data/real/conformance/``, made by
``tests/support/conformance_data.py``).

Where the binaries are built the tool judges now, and the committed files are checked
to be what the tool writes and prints today; elsewhere (CI) the committed outputs
judge.  A file is read exactly, or refused with the reason listed in ``REFUSED``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import csup_async
import planner
from csup_async import CsupError
from csup_async.model.errors import UnsupportedTypeError
from csup_async.model.values import strip_unions
from tests.support import oracle as oracles
from tests.support import realtools
from tests.support.conformance import Verdict, files, read_here, verdict
from tests.support.conformance_data import (
    DATA,
    OURS_READERS,
    WRITERS,
    input_file,
    input_flags,
    ours_bsup,
    ours_path,
)

CASES = [(name, path) for name, w in WRITERS.items() for path in files(w)]

#: Files csup-async refuses on purpose, with (part of) the reason it must name.
REFUSED: dict[tuple[str, str], str] = {}

#: Known wrong readings, each an expected failure (strict: fixing one makes it pass and
#: must remove it here): (test, writer, file) -> why.
WRONG: dict[tuple[str, str, str], str] = {}

#: Files whose rows and columns are refused with a named reason (docs/format.md), their
#: values read exactly: (writer, file) -> what the refusal says.
ROWS_REFUSED: dict[tuple[str, str], str] = {
    ("super-main", f"csup-any-0.{ext}"): "a column of `any` values"
    for ext in ("csup", "bsup")}


def _known_wrong(test: str, writer: str, path: Path) -> None:
    why = WRONG.get((test, writer, path.name))
    if why is not None:
        pytest.xfail(why)

#: Refusals of a whole writer and format that wait for a reader being written elsewhere:
#: (writer, suffix) -> (what the refusal says, the skip reason).
PENDING = {("super-main", ".csup"): ("version 23", "v23 reader not merged")}


def test_the_corpus_is_there_and_small() -> None:
    assert len(CASES) >= 100
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert size < 6 << 20, f"the conformance corpus is {size} bytes"


@pytest.mark.parametrize(("writer", "path"), CASES,
                         ids=[f"{w}/{p.name}" for w, p in CASES])
def test_reads_as_the_writer_prints(writer: str, path: Path) -> None:
    # the committed outputs judge: test_committed_files_are_what_the_tools_write_and_print
    # checks them against the tools themselves where they are built
    v = verdict(WRITERS[writer], path, live=False)
    if v.outcome == "unjudged":
        pytest.skip(f"the tool does not read its own file: {v.detail}")
    pending = PENDING.get((writer, path.suffix))
    if pending is not None and v.outcome == "refused" and pending[0] in v.detail:
        pytest.skip(pending[1])
    why = REFUSED.get((writer, path.name))
    if why is not None:
        assert v.outcome == "refused" and why in v.detail, v
    elif v.outcome == "wrong" and (w := WRONG.get(("values", writer, path.name))):
        pytest.xfail(w)
    else:
        assert v == Verdict("exact")


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_committed_files_are_what_the_tools_write_and_print(writer: str,
                                                            tmp_path: Path) -> None:
    """Live: the writer writes the committed bytes again from each input, and its tool
    prints the committed outputs for them (so CI's oracle is today's tool)."""
    w = WRITERS[writer]
    binary = realtools.require(w.oracle.tool, w.oracle.command)
    checked = 0
    for path in files(w):
        src = input_file(w.family, path.stem)
        fresh = tmp_path / path.name
        realtools.run(binary, *input_flags(src), "-f", path.suffix[1:], "-o", str(fresh),
                      str(src))
        assert fresh.read_bytes() == path.read_bytes(), path.name
        now, kept = oracles.run(w.oracle, path), oracles.committed(w.oracle, path)
        assert now is not None and kept is not None, path.name
        assert (now.json, now.text, now.binary, now.error) == (
            kept.json, kept.text, kept.binary, kept.error), path.name
        checked += 1
    assert checked == len(files(w))


COLUMNAR = [(w, p) for w, p in CASES if p.suffix in (".csup", ".vng")]
#: super main's BSUP (version 5), judged through ``convert``'s input reader: ``open``
#: reads it too (as a whole-object reader), and must read the same.
OPENED_BSUP5 = [(w, p) for w, p in CASES if w == "super-main" and p.suffix == ".bsup"]


@pytest.mark.parametrize(("writer", "path"), COLUMNAR + OPENED_BSUP5,
                         ids=[f"{w}/{p.name}" for w, p in COLUMNAR + OPENED_BSUP5])
def test_rows_and_columns_agree_with_the_values(writer: str, path: Path) -> None:
    """``read_rows`` and ``scan`` give what ``read_values`` gives (judged above): each
    column is its path's value in each row (a union column keeps every member's own
    type: a float64 among float32s stays float64)."""
    try:
        values = read_here(path)
    except CsupError:
        pytest.skip("refused (judged by test_reads_as_the_writer_prints)")
    if path.suffix == ".bsup":  # judged through convert's reader: open reads the same
        async def opened() -> list[tuple[object, object]]:
            async with csup_async.open(str(path)) as r:
                return [(v.type, v.value) for v in await r.read_values()]

        assert oracles.same(asyncio.run(opened()), values)
    refusal = ROWS_REFUSED.get((writer, path.name))
    if refusal is not None:
        with pytest.raises(UnsupportedTypeError, match=refusal):
            _rows_and_columns_agree(path, values)
        return
    if ("rows", writer, path.name) in WRONG:
        try:
            _rows_and_columns_agree(path, values)
        except (AssertionError, CsupError):
            _known_wrong("rows", writer, path)
        raise AssertionError(f"{path.name} now agrees: remove it from WRONG")
    _rows_and_columns_agree(path, values)


def _rows_and_columns_agree(path: Path, values: list[tuple[object, object]]) -> None:
    async def read() -> tuple[list[object], object]:
        async with csup_async.open(str(path)) as r:
            return await r.read_rows(), await r.scan()

    rows, res = asyncio.run(read())
    want = [strip_unions(v) for _, v in values]
    assert oracles.same(rows, want)
    for spelling, arr in res.columns.items():  # type: ignore[attr-defined]
        comps = planner.parse_path(spelling) if spelling else ()
        expect = []
        for r in want:
            for c in comps:
                r = r.get(c) if isinstance(r, dict) else None
            expect.append(r)
        assert oracles.same(arr.to_pylist(), expect), spelling


OURS = [(w, p) for w, p in CASES if w in OURS_READERS]


@pytest.mark.parametrize(("writer", "path"), OURS, ids=[f"{w}/{p.name}" for w, p in OURS])
def test_zq_reads_our_bsup_of_its_files_as_its_own(writer: str, path: Path,
                                                     tmp_path: Path) -> None:
    """The other direction: csup-async's BSUP of what it read from a zq file prints in
    zq as the zq file does (JSON and ZSON).  Live when zq is built; in CI our BSUP must be
    the committed bytes, which zq printed that way when they were made."""
    o = WRITERS[writer].oracle
    ours = ours_bsup(path)
    if ours == ours_path(path).read_bytes():  # what zq printed for these bytes, committed
        printed = oracles.committed(o, ours_path(path))
    else:  # new bytes: only the real zq can judge them
        fresh = tmp_path / "ours.bsup"
        fresh.write_bytes(ours)
        printed = oracles.run(o, fresh)
        assert printed is not None, "our BSUP changed; zq is not built to judge it " \
            "(python -m tests.support.conformance_data ours, with zq)"
    original = oracles.committed(o, path)
    assert printed is not None and original is not None
    assert printed.error is None, printed.error
    assert (printed.json, printed.text) == (original.json, original.text)


@pytest.mark.parametrize("writer", ["super-0.3", "super-0.2", "zq-1.12", "zq-1.7"])
def test_the_judge_sees_a_wrong_value_and_a_wrong_type(writer: str) -> None:
    """The judge is not vacuous: one value changed, or one type, is seen."""
    from csup_async.model.types import PrimitiveType, RecordType

    w = WRITERS[writer]
    path = next(p for p in files(w) if p.suffix in (".csup", ".vng") and any(
        isinstance(t, RecordType) and any(f.type == PrimitiveType("int64", 9)
                                          for f in t.fields) for t, _ in read_here(p)))
    values = read_here(path)
    p = oracles.printed(w.oracle, path)
    assert p is not None and oracles.judge(values, p, w.oracle) is None
    i, (t, v) = next((i, tv) for i, tv in enumerate(values) if isinstance(tv[0], RecordType)
                     and any(f.type == PrimitiveType("int64", 9) for f in tv[0].fields))
    name = next(f.name for f in t.fields if f.type == PrimitiveType("int64", 9))
    changed = list(values)
    changed[i] = (t, {**v, name: (v.get(name) or 0) + 1})
    assert oracles.judge(changed, p, w.oracle) is not None
    retyped = list(values)
    retyped[i] = (RecordType(tuple(f if f.name != name else type(f)(name, PrimitiveType(
        "int32", 7)) for f in t.fields)), v)
    assert oracles.judge(retyped, p, w.oracle) is not None
