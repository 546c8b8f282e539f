"""The filter text's ``like``, ``between``, ``in (...)`` and double-quoted strings


(issue #39, item 21): parsed as SuperDB writes them, evaluated exactly (a hypothesis
differential against an independent Python reference, with NaN and signed zero, and
against polars' SQL), through ``read(filter=...)``, ``scan_polars`` and the CLI."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.cli import main
from planner.filters import And, Compare, FilterError, IsIn, Like, Not, col
from planner.filtertext import parse_filter

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

pl = pytest.importorskip("polars")


# ------------------------------------------------------------ the parser ---

@pytest.mark.parametrize(("text", "want"), [
    ('level = "error"', Compare("==", ("level",), "error")),
    ("level = 'error'", Compare("==", ("level",), "error")),
    (r'x = "say \"hi\" \\ \u00e9"', Compare("==", ("x",), 'say "hi" \\ é')),
    ("x between 1 and 3", And((Compare(">=", ("x",), 1), Compare("<=", ("x",), 3)))),
    ("x not between -0.0 and 2.5", Not(And((Compare(">=", ("x",), -0.0),
                                             Compare("<=", ("x",), 2.5))))),
    ("s like 'a%'", Like(("s",), "a%")),
    (r's not like "%\\_x"', Not(Like(("s",), "%\\_x"))),  # an escaped \ in "..."
    ("x in (1, 2)", IsIn(("x",), (1, 2))),
    ('s not in ("a", \'b\')', Not(IsIn(("s",), ("a", "b")))),
    ("x between 1 and 3 and y = 2", And((And((Compare(">=", ("x",), 1),
                                               Compare("<=", ("x",), 3))),
                                          Compare("==", ("y",), 2)))),
])
def test_the_text_parses_as_superdb_writes_it(text: str, want: Any) -> None:
    assert parse_filter(text) == want


def test_the_python_builders_match_the_text() -> None:
    assert col("x").between(1, 3) == parse_filter("x between 1 and 3")
    assert col("s").like("a_%") == parse_filter("s like 'a_%'")


@pytest.mark.parametrize(("text", "hint"), [
    ("level = error", "strings take quotes"),
    ("level = 'err", "a string that is not closed"),
    ('level = "err', "a string that is not closed"),
    ("s like 3", "like takes a quoted string"),
    ("x between 1 or 3", "expected 'and'"),
    ("x not = 3", "'in', 'between' or 'like'"),
])
def test_errors_say_what_to_write(text: str, hint: str) -> None:
    with pytest.raises(FilterError, match=hint):
        parse_filter(text)


def test_like_needs_a_string_column(tmp_path: Path) -> None:
    p = tmp_path / "t.csup"
    csup_async.write(p, [{"i": 1}])
    with pytest.raises(FilterError, match="like needs a string column"):
        csup_async.read(str(p), filter="i like '1%'")


# ------------------------------------------------------ the differential ---

def like_match(s: str, pattern: str) -> bool:
    """SQL ``like`` by dynamic programming over the pattern's tokens (no regex)."""
    toks: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            toks.append(("lit", pattern[i + 1]))
            i += 2
            continue
        toks.append(("any", "") if c == "%" else ("one", "") if c == "_" else ("lit", c))
        i += 1
    # ok[j]: the first j tokens match a prefix of s ending at the current position
    ok = [True] + [False] * len(toks)
    for j, (kind, _) in enumerate(toks):
        if kind == "any":
            ok[j + 1] = ok[j]
    for ch in s:
        new = [False] * (len(toks) + 1)
        for j, (kind, lit) in enumerate(toks):
            if kind == "any":
                new[j + 1] = new[j] or ok[j + 1]
            elif kind == "one" or (kind == "lit" and lit == ch):
                new[j + 1] = ok[j]
        ok = new
    return ok[-1]


def _cmp(a: Any, op: str, b: Any) -> bool | None:
    if a is None:
        return None
    return {">=": a >= b, "<=": a <= b, "==": a == b}[op]  # IEEE: NaN compares false


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _not(a: bool | None) -> bool | None:
    return None if a is None else not a


FLOATS = st.sampled_from([math.nan, -0.0, 0.0, 1.5, -2.0, math.inf, -math.inf, None])
STRINGS = st.none() | st.text(alphabet="ab%_\\", max_size=4)
ROWS = st.lists(st.fixed_dictionaries({"i": st.none() | st.integers(-3, 3), "f": FLOATS,
                                        "s": STRINGS}), min_size=1, max_size=30)
PATTERNS = st.text(alphabet="ab%_\\", max_size=4)
NUMBERS = st.sampled_from([-0.0, 0.0, 1.5, -2.0, -1, 2])


@st.composite
def _leaf(draw: Any) -> tuple[str, Any]:
    """A filter's text and its reference outcome for a row."""
    kind = draw(st.sampled_from(["like", "between_i", "between_f", "in_i", "in_s"]))
    neg = draw(st.booleans())
    if kind == "like":
        p = draw(PATTERNS)
        quoted = "'" + p.replace("'", "''") + "'"
        ref = lambda r, p=p: None if r["s"] is None else like_match(r["s"], p)  # noqa: E731
        text = f"s {'not ' if neg else ''}like {quoted}"
    elif kind.startswith("between"):
        c = kind[-1]
        lo, hi = draw(NUMBERS), draw(NUMBERS)
        if c == "i":
            lo, hi = int(lo), int(hi)
        ref = lambda r, c=c, lo=lo, hi=hi: _and(_cmp(r[c], ">=", lo),  # noqa: E731
                                               _cmp(r[c], "<=", hi))
        text = f"{c} {'not ' if neg else ''}between {lo!r} and {hi!r}"
    elif kind == "in_i":
        vals = draw(st.lists(st.integers(-3, 3), min_size=1, max_size=3))
        ref = lambda r, v=vals: None if r["i"] is None else r["i"] in v  # noqa: E731
        text = f"i {'not ' if neg else ''}in ({', '.join(map(str, vals))})"
    else:
        vals = draw(st.lists(st.text(alphabet="ab%", max_size=2), min_size=1, max_size=3))
        ref = lambda r, v=vals: None if r["s"] is None else r["s"] in v  # noqa: E731
        text = f"s {'not ' if neg else ''}in ({', '.join(repr(v) for v in vals)})"
        text = text.replace("'", '"') if draw(st.booleans()) else text
    if neg:
        return text, lambda r, ref=ref: _not(ref(r))
    return text, ref


@st.composite
def _filters(draw: Any) -> tuple[str, Any]:
    a = draw(_leaf())
    if draw(st.booleans()):
        return a
    b = draw(_leaf())
    return f"({a[0]}) and ({b[0]})", lambda r: _and(a[1](r), b[1](r))


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, flt=_filters())
def test_filters_keep_exactly_the_reference_rows(tmp_path: Path, rows: list[dict[str, Any]],
                                                 flt: tuple[str, Any]) -> None:
    text, ref = flt
    p = tmp_path / "t.csup"
    csup_async.write(p, rows, segment_thresh=64)
    want = [i for i, r in enumerate(rows) if ref(r) is True]
    rows_n = [dict(r, n=k) for k, r in enumerate(rows)]
    csup_async.write(p, rows_n, segment_thresh=64)
    got = csup_async.read(str(p), ["n"], filter=text).to_arrow().column("n").to_pylist()
    assert got == want, text


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(strings=st.lists(STRINGS, min_size=1, max_size=20),
       pattern=st.text(alphabet="ab%_", max_size=4), neg=st.booleans())
def test_like_keeps_the_rows_polars_sql_keeps(tmp_path: Path, strings: list[Any],
                                              pattern: str, neg: bool) -> None:
    p = tmp_path / "s.csup"
    rows = [{"s": s, "n": k} for k, s in enumerate(strings)]
    csup_async.write(p, rows)
    cond = f"s {'not ' if neg else ''}like '{pattern}'"
    want = pl.SQLContext(t=pl.DataFrame(rows, schema={"s": pl.String, "n": pl.Int64})
                         ).execute(f"select n from t where {cond}", eager=True)["n"].to_list()
    assert csup_async.read(str(p), ["n"], filter=cond).to_arrow().column("n").to_pylist() == want


def test_like_and_between_prune_segments_soundly(tmp_path: Path) -> None:
    """Statistics skip what cannot match and never what can: the prefix of a like."""
    p = tmp_path / "big.csup"
    rows = [{"s": f"{chr(97 + k // 1000)}{k:05}", "i": k} for k in range(6000)]
    csup_async.write(p, rows, segment_thresh=2048)
    for text in ("s like 'c%'", "s like 'c0_5%'", "s like '%99'", "i between 2500 and 2600",
                 "s like 'd02999'", "s not like 'a%'"):
        want = [r["i"] for r in rows if _py(text, r)]
        got = csup_async.read(str(p), ["i"], filter=text).to_arrow().column("i").to_pylist()
        assert got == want, text


def _py(text: str, r: dict[str, Any]) -> bool:
    from planner.filters import matches

    return matches(parse_filter(text), r)


def test_the_cli_and_scan_polars_take_the_new_forms(tmp_path: Path, capsys: Any) -> None:
    p = tmp_path / "t.csup"
    csup_async.write(p, [{"level": lv, "n": k} for k, lv in
                         enumerate(["error", "warn", "info", "error!"])])
    assert main(["scan", str(p), "--where", 'level = "error"']) == 0
    assert capsys.readouterr().out.count('"n"') == 1
    assert main(["scan", str(p), "--where", "level like 'err%' and n between 0 and 2"]) == 0
    assert capsys.readouterr().out.count('"n"') == 1
    with pytest.raises(SystemExit) as stop:  # a usage error, as every bad --where
        main(["scan", str(p), "--where", "level = error"])
    assert stop.value.code == 2 and "strings take quotes" in capsys.readouterr().err
    got = csup_async.read(str(p), ["n"], filter="level in ('warn', \"info\")").to_pylist()
    assert got == [{"n": 1}, {"n": 2}]
