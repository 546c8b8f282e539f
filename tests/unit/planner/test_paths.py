"""Column paths: one syntax (backquotes) and one column-list parser for every entry point.

Field names come from data and may hold dots, backquotes, commas or nothing at
all; each must be projectable, spelled the same way in results, error messages
and the default column list, whether a file is read whole, in batches or as a
dataset.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import csup_async
import planner as P
from csup_async.model.errors import ColumnNotFoundError
from planner import InvalidPathError


async def _scan(path, columns=None):
    async with csup_async.open(str(path)) as r:
        return (await r.scan(columns)).to_pylist()


async def _batches(path, columns=None):
    async with csup_async.open(str(path)) as r:
        return [row async for b in r.iter_batches(columns, batch_rows=1)
                for row in b.to_pylist()]


async def test_a_dotted_field_name_is_projectable(tmp_path):
    p = tmp_path / "d.csup"
    csup_async.write(str(p), [{"a.b": 1, "c": 2}])
    # the default column list spells the name as a path, and the keys follow it
    assert await _scan(p) == [{"`a.b`": 1, "c": 2}]
    assert await _scan(p, ["`a.b`"]) == [{"`a.b`": 1}]
    assert await _scan(p, [("a.b",)]) == [{"`a.b`": 1}]  # a tuple: names, no quoting
    assert await _scan(p, "`a.b`, c") == [{"`a.b`": 1, "c": 2}]
    with pytest.raises(ColumnNotFoundError) as e:
        await _scan(p, "a.b")  # field b of a record a: there is none
    assert "columns: `a.b`, c" in str(e.value) and not str(e.value).endswith(", ")


async def test_dotted_name_beside_a_nested_path(tmp_path):
    p = tmp_path / "n.csup"
    csup_async.write(str(p), [{"a.b": 1, "a": {"b": 2}}])
    assert await _scan(p, "a.b") == [{"a.b": 2}]
    assert await _scan(p, "`a.b`") == [{"`a.b`": 1}]
    assert await _scan(p, "`a.b`,a") == [{"`a.b`": 1, "a": {"b": 2}}]
    assert await _scan(p, [("a.b",), ("a", "b")]) == [{"`a.b`": 1, "a.b": 2}]
    assert await _batches(p, "a.b,`a.b`") == [{"a.b": 2, "`a.b`": 1}]


async def test_backquote_comma_and_spaces_in_names(tmp_path):
    p = tmp_path / "q.csup"
    csup_async.write(str(p), [{"x`y": 1, "p,q": 2, " pad": 3}])
    assert await _scan(p) == [{"`x``y`": 1, "`p,q`": 2, "` pad`": 3}]
    assert await _scan(p, "`x``y`,`p,q`") == [{"`x``y`": 1, "`p,q`": 2}]
    assert await _scan(p, [("x`y",), (" pad",)]) == [{"`x``y`": 1, "` pad`": 3}]
    async with csup_async.open(str(p)) as r:
        res = await r.scan()
        assert res.column(("x`y",)).to_pylist() == [1] == res.column("`x``y`").to_pylist()


async def test_an_empty_field_name_in_batches_and_whole(tmp_path):
    p = tmp_path / "e.csup"
    csup_async.write(str(p), [{"": 1, "b": 2}, {"": 3, "b": 4}])
    want = [{"``": 1, "b": 2}, {"``": 3, "b": 4}]
    assert await _scan(p) == want
    assert await _batches(p) == want  # not the whole row inside the field
    assert await _batches(p, "``") == [{"``": 1}, {"``": 3}]
    assert await _scan(p, [""]) == [{"": {"": 1, "b": 2}}, {"": {"": 3, "b": 4}}]


async def test_reader_and_dataset_parse_column_lists_alike(tmp_path):
    d = tmp_path / "ds"
    d.mkdir()
    csup_async.write(str(d / "one.csup"), [{"id": 1, "level": "x"}])
    async with csup_async.open(str(d / "one.csup")) as r, \
            csup_async.open_dataset(str(d)) as ds:
        for bad in ("a,", ",a", "", "id,,level", "a..b"):
            with pytest.raises(InvalidPathError):
                await r.plan(bad)
            with pytest.raises(InvalidPathError):
                await ds.plan(bad)
            with pytest.raises(InvalidPathError):
                await ds.scan(bad)
        assert (await r.plan("id, level")).columns == ("id", "level")
        assert (await ds.plan("id, level")).columns == ("id", "level")
        assert (await ds.scan(" id , level ")).to_pylist() == [{"id": 1, "level": "x"}]
        assert (await r.scan(["id"])).to_pylist() == (await ds.scan("id")).to_pylist()


async def test_no_such_column_lists_full_paths(tmp_path):
    p = tmp_path / "deep.csup"
    csup_async.write(str(p), [{"a": {"b": 1, "c": {"d": 2}}, "e": 3}])
    with pytest.raises(ColumnNotFoundError) as e:
        await _scan(p, "zz")
    msg = str(e.value)
    assert msg.endswith("columns: a.b, a.c.d, e")


names = st.text(alphabet=st.sampled_from(list("ab.`, []{}<>\t")), max_size=4)


@given(st.lists(st.tuples(names, names).map(lambda t: tuple(x for x in t if x) or ("",)),
                min_size=1, max_size=4))
def test_formatted_paths_round_trip_through_a_column_list(paths):
    text = " , ".join(P.format_path(p) for p in paths)
    parsed = P.parse_columns(text)
    want = list(dict.fromkeys(paths))
    assert parsed is not None and [c for _, c in parsed] == want
    # the spellings are canonical: formatting again gives the same text
    assert [s for s, _ in parsed] == [P.format_path(c) for c in want]
    assert P.parse_columns([s for s, _ in parsed]) == parsed
    assert P.parse_columns(want) == parsed


def test_column_list_forms():
    assert P.parse_columns(None) is None and P.parse_columns([]) is None
    assert P.parse_columns("a, `b.c` ,d.e") == (("a", ("a",)), ("`b.c`", ("b.c",)),
                                                 ("d.e", ("d", "e")))
    assert P.parse_columns([""]) == (("", ()),)  # the whole value: a list entry, not text
    assert P.parse_columns(["`a`", "a", ("a",)]) == (("a", ("a",)),)
    for bad in ("", "  ", "a,", "`a,b", ["a."], [3], [("a", 3)]):
        with pytest.raises(InvalidPathError):
            P.parse_columns(bad)
