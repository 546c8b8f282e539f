"""Scan columns that hold unions keep every value's own member, exactly.

Untyped, a union value is tagged with the first member that can hold it: a float64
among float32s rounded to float32 (super main's runtime-op-sort-numbers.csup), an
int64 among int8s or a uint64 among uint8s tagged with the narrower type, a float32
among float16s rounded, a string among enums tagged with the enum.  The files were
written by the real ``super`` (main: CSUP v23; v0.3.0: v16 and its BSUP) from the same values
(``numunions.sup``): numeric scalars of many types (a top-level union column), record
fields of several types, arrays of mixed numbers (a union inside a column that is not
one), a field typed ``float32|float64``, a map with union keys and values, a union
of records and ``enum|string`` and ``port|uint16`` fields.  Every column a scan gives
must hold, row for row, the value and the type ``read_values`` gives at that path
(judged against the tool's own output by test_v23_real_files / test_conformance).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.format.superdb.bsup5 import columnar
from csup_async.model.types import RecordType
from csup_async.model.values import UnionValue, Value

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
FILES = {"v23": REAL / "super-main" / "numunions.csup", "v16": REAL / "super" / "numunions.csup",
         # super v0.3.0's BSUP of the v16 file: the BSUP reader's columns, the same way
         "bsup2": REAL / "super" / "numunions.bsup"}


def typed(v: Any, t: Any = None) -> Any:
    """A value as (type, value) all the way down, with the type a scan's column says it
    (``columnar``: v23's ``none`` as null); union tags and ``Value`` wrappers alike."""
    if isinstance(v, Value | UnionValue):
        return typed(v.value, v.type)
    if isinstance(v, dict):
        v = sorted(((repr(typed(k)), typed(x)) for k, x in v.items()), key=repr)
    elif isinstance(v, list):
        v = [typed(x) for x in v]
    return (None if t is None else str(columnar(t)), v)


def read(path: Path) -> tuple[list[Value], dict[str, list[Any]]]:
    async def go() -> tuple[list[Value], dict[str, list[Any]]]:
        async with csup_async.open(str(path)) as r:
            values = await r.read_values()
            res = await r.scan()
        return values, {p: a.to_pylist(typed=True) for p, a in res.columns.items()}

    return asyncio.run(go())


def at(v: Value, path: str) -> Any:
    """``read_values``' value at a top-level column: the row itself for ``""``, else its
    field typed with the field's type (None where the row has no such field)."""
    if path == "":
        return v
    if not isinstance(v.type, RecordType) or v.type.field(path) is None:
        return None
    x = v.value.get(path)
    return None if x is None else Value(v.type.field(path).type, x)  # type: ignore[union-attr]


@pytest.mark.parametrize("version", sorted(FILES))
def test_every_column_keeps_each_values_own_type_and_precision(version: str) -> None:
    values, cols = read(FILES[version])
    assert {"", "a", "b", "u", "e", "n", "m", "r"} <= set(cols)
    for path, got in cols.items():
        assert len(got) == len(values)
        for i, (g, v) in enumerate(zip(got, values, strict=True)):
            want = at(v, path)
            if want is None:
                assert g is None, (path, i)
                continue
            if not isinstance(g, UnionValue):  # a column that is not a union at its top
                g = Value(want.type, g)
            assert typed(g) == typed(want), f"{version} column {path!r} row {i}"


@pytest.mark.parametrize("version", sorted(FILES))
def test_the_wide_values_are_not_narrowed(version: str) -> None:
    """The cases named above, spelled out: each value with the member it was written as."""
    _, cols = read(FILES[version])

    def members(col: str) -> list[tuple[str, Any]]:
        return [(str(x.type), x.value) if isinstance(x, UnionValue) else ("", x)
                for x in cols[col]]

    top = members("")[:8]
    assert top == [("int8", 5), ("int64", 5), ("int16", 300), ("uint8", 5), ("uint64", 5),
                   ("float16", 1.5), ("float32", top[6][1]), ("float64", 1.1)]
    assert top[6][1] != 1.1 and abs(top[6][1] - 1.1) < 1e-6  # a float32 stays one
    assert members("a")[8:14] == [("int8", 5), ("int64", 5), ("float32", members("a")[10][1]),
                                  ("float64", 1.1), ("float16", 0.0999755859375),
                                  ("uint32", 5)]
    assert members("u")[8:12] == [("float64", 1.1), ("float32", members("u")[9][1]),
                                  ("float32", members("u")[9][1]), ("float64", 1.1)]
    b8 = cols["b"][8].value if isinstance(cols["b"][8], UnionValue) else cols["b"][8]
    assert [(str(x.type), x.value) for x in b8][1:4] == [
        ("float64", 1.1), ("int8", 5), ("int64", 5)]
    assert [str(x.type) for x in (cols["e"][8], cols["e"][9])] == ["enum(x,y)", "string"]
    assert [str(x.type) for x in (cols["n"][8], cols["n"][9])] == ["port=(uint16)", "uint16"]
    m = cols["m"][12]
    assert sorted((str(k.type), str(x.type), x.value) for k, x in m.items()) == [
        ("int64", "float64", 1.1), ("int8", "float32", m[next(iter(m))].value)]
    assert [str(cols["r"][i].type) for i in (12, 13)] == ["{x:float32}", "{x:float64}"]
    assert cols["r"][13].value == {"x": 1.1}


def test_rows_of_a_scan_are_the_exact_values() -> None:
    """``read_rows`` and a scan's plain values agree too, to the last bit of a float64."""
    async def go() -> tuple[list[Any], dict[str, list[Any]]]:
        async with csup_async.open(str(FILES["v23"])) as r:
            rows = await r.read_rows()
            res = await r.scan()
        return rows, {p: a.to_pylist() for p, a in res.columns.items()}

    rows, cols = asyncio.run(go())
    assert cols[""] == rows  # (the map with keys 1::int8 and 1::int64: both entries, as pairs)
    for c in ("a", "b", "u", "e", "n", "m", "r"):
        assert [r.get(c) if isinstance(r, dict) else None for r in rows] == cols[c], c
