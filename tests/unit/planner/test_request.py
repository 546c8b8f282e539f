"""A verb's arguments parsed once (``planner.request.ScanRequest``): what the parse accepts
and how it normalises it, the error (class and message) for each bad argument, and, read
from the source, that no module below the verbs' edges checks or normalises them again."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from csup_async.model.errors import ArgumentError, RowSelectionError
from csup_async.model.options import DEFAULT_BATCH_ROWS
from planner.dnf import from_dnf
from planner.errors import InvalidPathError
from planner.filters import FilterError, col
from planner.filtertext import parse_filter
from planner.paths import format_path, parse_columns
from planner.request import NO_BUDGET, Budget, ScanRequest
from tests.support.paths import ROOT

names = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1,
                max_size=6)
paths = st.lists(names, min_size=1, max_size=3).map(lambda cs: format_path(tuple(cs)))


def test_nothing_given_is_every_column_every_row_no_budget() -> None:
    req = ScanRequest.parse()
    assert (req.columns, req.filter, req.rows, req.limit, req.indices) == (
        None, None, None, None, None)
    assert req.batch_rows == DEFAULT_BATCH_ROWS and req.prefetch is None
    assert req.budget is NO_BUDGET and not req.budget.given and req.plain


@given(st.lists(paths, max_size=6))
def test_columns_are_the_one_parsers_spellings_deduplicated(cols: list[str]) -> None:
    want = parse_columns(cols)
    got = ScanRequest.parse(cols).columns
    assert got == (None if want is None else tuple(s for s, _ in want))
    assert got is None or len(set(got)) == len(got)
    # a comma-separated string is the same list
    if cols and all("," not in c and "`" not in c for c in cols):
        assert ScanRequest.parse(",".join(cols)).columns == got


@pytest.mark.parametrize("bad", [b"a", [1], "a,,b", ["a", "  "]])
def test_a_bad_column_list_is_an_invalid_path_error_naming_the_object(bad: object) -> None:
    with pytest.raises(InvalidPathError) as e:
        ScanRequest.parse(bad, path="s3://b/k.csup")
    assert str(e.value).startswith("s3://b/k.csup: ")


def test_the_filter_is_in_one_form_whatever_was_given() -> None:
    expr = col("a") > 3
    assert ScanRequest.parse(filter=expr).filter == expr
    assert ScanRequest.parse(filter="a > 3").filter == parse_filter("a > 3")
    assert ScanRequest.parse(filters=[("a", ">", 3)]).filter == from_dnf([("a", ">", 3)])
    assert ScanRequest.parse(filter=[("a", ">", 3)]).filter == from_dnf([("a", ">", 3)])
    with pytest.raises(FilterError, match="pass filter= or filters=, not both"):
        ScanRequest.parse(filter="a > 3", filters=[("a", ">", 3)], path="k")


@given(st.one_of(st.none(), st.integers(0, 1 << 70)))
def test_a_limit_of_none_or_an_integer_at_least_0_is_kept(limit: int | None) -> None:
    assert ScanRequest.parse(limit=limit).limit == limit


@pytest.mark.parametrize("bad", [-1, True, 2.0, "3", np.int64(2)])
def test_a_bad_limit_is_a_row_selection_error(bad: object) -> None:
    with pytest.raises(RowSelectionError, match=r"^k: limit must be an integer >= 0, not "):
        ScanRequest.parse(limit=bad, path="k")


@given(st.one_of(st.none(), st.integers(-50, 50)), st.one_of(st.none(), st.integers(-50, 50)),
       st.sampled_from([None, 1]))
def test_a_slice_of_step_1_is_kept_as_given(a: int | None, b: int | None,
                                            step: int | None) -> None:
    assert ScanRequest.parse(rows=slice(a, b, step)).rows == slice(a, b, step)


@pytest.mark.parametrize(("bad", "message"), [
    ([0, 1], "rows must be a slice, not list"),
    (slice(0, 10, 2), r"rows=slice\(...\) supports step 1 only, not 2"),
    (slice(0.5, 3), "slice bounds must be integers, not 0.5"),
    (slice(True, 3), "slice bounds must be integers, not True"),
])
def test_a_bad_rows_is_a_row_selection_error(bad: object, message: str) -> None:
    with pytest.raises(RowSelectionError, match=f"^k: {message}"):
        ScanRequest.parse(rows=bad, path="k")


@given(st.lists(st.integers(0, np.iinfo(np.int64).max), max_size=20))
def test_indices_become_int64_row_numbers_in_the_order_given(idx: list[int]) -> None:
    got = ScanRequest.parse(indices=idx).indices
    assert got is not None and got.dtype == np.int64 and got.tolist() == idx
    same = ScanRequest.parse(indices=np.asarray(idx, np.uint64)).indices
    assert same is not None and same.tolist() == idx


@pytest.mark.parametrize(("bad", "message"), [
    ([0, -1], "row index -1 is negative"),
    ([1 << 63], f"row index {1 << 63} is out of range"),
    ([0, 1.0], r"row indices must be integers, not float \(1.0\)"),
    ([True], r"row indices must be integers, not bool"),
    (np.zeros((2, 2), np.int64), "row indices must be a 1-D integer array, not 2-D int64"),
    (np.zeros(3), "row indices must be a 1-D integer array, not 1-D float64"),
    ("012", "take.. needs a sequence of row indices, not str"),
    (7, "take.. needs a sequence of row indices, not int"),
])
def test_bad_indices_are_a_row_selection_error_the_stricter_check(bad: object,
                                                                  message: str) -> None:
    with pytest.raises(RowSelectionError, match=f"^k: {message}"):
        ScanRequest.parse(indices=bad, path="k")


@given(st.integers(1, 1 << 40), st.one_of(st.none(), st.integers(0, 1 << 20)))
def test_batch_rows_and_prefetch_become_ints(batch_rows: int, prefetch: int | None) -> None:
    req = ScanRequest.parse(batch_rows=np.int64(batch_rows), prefetch=prefetch)
    assert type(req.batch_rows) is int and req.batch_rows == batch_rows
    assert req.prefetch == prefetch


@pytest.mark.parametrize(("given_", "message"), [
    ({"batch_rows": 0}, "batch_rows must be an integer >= 1, not 0"),
    ({"batch_rows": None}, r"batch_rows must be an integer >= 1, not NoneType \(None\)"),
    ({"batch_rows": 2.5}, r"batch_rows must be an integer >= 1, not float \(2.5\)"),
    ({"prefetch": -1}, "prefetch must be an integer >= 0, not -1"),
    ({"prefetch": True}, r"prefetch must be an integer >= 0, not bool \(True\)"),
])
def test_bad_batch_arguments_are_an_argument_error(given_: dict, message: str) -> None:
    with pytest.raises(ArgumentError, match=f"^k: {message}"):
        ScanRequest.parse(path="k", **given_)


def test_the_budget_is_checked_and_says_what_was_given() -> None:
    seen: list[object] = []
    req = ScanRequest.parse(max_requests=3, on_progress=seen.append)
    assert req.budget == Budget(3, None, seen.append) and req.budget.given
    assert req.budget.keywords() == {"max_requests": 3, "on_progress": seen.append}
    meter = req.budget.meter("k")
    assert meter is not None and meter.max_requests == 3 and meter.path == "k"
    assert NO_BUDGET.meter() is None and NO_BUDGET.keywords() == {}
    for bad, message in [({"max_bytes": -1}, "max_bytes must be None or an integer >= 0"),
                         ({"max_requests": 1.5}, "max_requests must be None or an integer"),
                         ({"max_requests": True}, "max_requests must be None or an integer"),
                         ({"on_progress": 3}, "on_progress must be callable, not int")]:
        with pytest.raises(ArgumentError, match=message):
            ScanRequest.parse(**bad)


def test_a_request_is_frozen_and_but_derives_without_checking() -> None:
    req = ScanRequest.parse(["a"], filter="a > 1", limit=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.limit = 3  # type: ignore[misc]
    narrowed = req.but(columns=("b",), limit=2)
    assert (narrowed.columns, narrowed.limit, narrowed.filter) == (("b",), 2, req.filter)
    assert req.limit == 5
    # below the edge nothing is checked again: what a layer derives is its own promise
    assert req.but(limit=-1).limit == -1


# ------------------------------------------------------------- one place ---
#: The checks and the normaliser of a verb's arguments, by where they are defined, and
#: the modules that may call them: the request's parse (and a check's own module).
ONE_PLACE: dict[tuple[str, str], frozenset[str]] = {
    ("planner.dnf", "as_expr"): frozenset({"planner.request"}),
    ("csup_async.model.selection", "check_limit"): frozenset({"planner.request"}),
    ("csup_async.model.selection", "check_count"): frozenset({"planner.request"}),
    ("csup_async.model.selection", "row_indices"): frozenset({"planner.request"}),
    ("csup_async.model.budget", "check_limits"): frozenset({"planner.request"}),
    ("planner.selection", "check_rows"): frozenset({"planner.request", "planner.selection"}),
    # a Meter is made of a parsed budget (its limits checked there), never of loose keywords
    ("csup_async.model.progress", "Meter"): frozenset({"planner.request"}),
}


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    if not level:
        return name or ""
    base = module.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([name] if name else []))


def _calls(source: str, module: str, is_package: bool = False) -> list[tuple[str, str, int]]:
    """``(defining module, name, line)`` of every call in ``source`` (the text of
    ``module``) of a watched function, by a name imported from its module (``from m
    import f``, relative or renamed) or as an attribute of the module (``import m as x``,
    ``x.f(...)``)."""
    tree = ast.parse(source)
    names: dict[str, tuple[str, str]] = {}
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            src = _absolute(module, is_package, node.level, node.module)
            for a in node.names:
                names[a.asname or a.name] = (src, a.name)
                modules[a.asname or a.name] = f"{src}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    modules[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    modules[top] = top
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in names:
            target = names[f.id]
        elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
              and f.value.id in modules):
            target = (modules[f.value.id], f.attr)
        else:
            continue
        if target in ONE_PLACE:
            out.append((*target, node.lineno))
    return out


def test_the_watcher_sees_each_way_of_calling() -> None:
    """The check below means something: it finds a call by name, by a renamed import, by a
    relative import and through the module, and not a function of the same name."""
    probe = ("from planner.dnf import as_expr as norm\n"
             "from ..model.selection import check_limit\n"
             "from ..decode.tags import check_count\n"
             "import planner.dnf as D\n"
             "norm(1)\ncheck_limit(2)\nD.as_expr(3)\ncheck_count(4)\n")
    found = [(m, n) for m, n, _ in _calls(probe, "csup_async.readers.probe")]
    assert found == [("planner.dnf", "as_expr"), ("csup_async.model.selection", "check_limit"),
                     ("planner.dnf", "as_expr")]


def test_each_argument_is_checked_and_normalised_in_one_place() -> None:
    """A verb's request is parsed where the verb is entered (``ScanRequest.parse``); a
    module below it that normalised the filter again, re-checked the limit, the rows, the
    row indices, ``batch_rows``/``prefetch`` or the budget would be a second place for
    the same rule, free to drift (the row-index checks had already drifted apart)."""
    stray = []
    for pkg in ("csup_async", "planner"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            module, is_package = _module_name(path)
            for where, name, line in _calls(path.read_text(), module, is_package):
                if module not in ONE_PLACE[(where, name)]:
                    stray.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not stray, f"checked or normalised outside planner.request: {stray}"


def test_a_request_without_indices_is_no_take() -> None:
    assert ScanRequest.parse(indices=[2, 0]).taken.tolist() == [2, 0]
    with pytest.raises(ArgumentError, match=r"take\(\) needs row indices"):
        _ = ScanRequest.parse(["a"]).taken


#: The modules that may parse a request (``ScanRequest.parse``): where a verb is entered.
#: The lake's object scans (``lake.read``) and Spark's planning and tasks
#: (``spark.planning``, ``spark.scaleout``, ``spark.executor``) are below an edge: they
#: run the request of the pool scan (``lake.pool``) or of the driver (``spark.options``,
#: ``spark.lake``), narrowed with ``but``, and never parse one (a parse per object, per
#: file or per task would check the same arguments again).
PARSE_EDGES = frozenset({
    "csup_async.readers.execution", "csup_async.readers.planning",
    "csup_async.datasets.dataset", "csup_async.datasets.fragment", "csup_async.sync.facade",
    "csup_async.lake.pool", "csup_async.spark.options", "csup_async.spark.lake"})


def _parses(source: str) -> list[int]:
    """Lines of ``ScanRequest.parse(...)`` calls (the class by any imported name)."""
    tree = ast.parse(source)
    names = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for a in node.names if a.name == "ScanRequest"}
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "parse" and isinstance(node.func.value, ast.Name)
            and node.func.value.id in names]


def test_requests_are_parsed_at_the_edges_only() -> None:
    assert _parses("from planner.request import ScanRequest as R\nR.parse(1)\n"
                   "ScanRequest.parse(2)\nx.parse(3)\n") == [2]
    stray = []
    for pkg in ("csup_async", "planner"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            module, _ = _module_name(path)
            if module in PARSE_EDGES | {"planner.request"}:
                continue
            stray += [f"{path.relative_to(ROOT)}:{line}" for line in _parses(path.read_text())]
    assert not stray, f"a request parsed below a verb's edge: {stray}"
    for module in PARSE_EDGES:  # (the list names modules that exist and parse)
        path = ROOT / (module.replace(".", "/") + ".py")
        assert _parses(path.read_text()), module
