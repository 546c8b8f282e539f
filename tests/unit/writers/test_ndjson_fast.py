"""JSON lines written through the C tape (csup_async/writers/ndjson.py) give the very file the
reference gives: ``json.loads`` of each line, then the row writer (pyrows).

The reference is ``csup_async.write(path, read_json(src))``; the fast path is
``csup_async.write(path, JsonFile(src))`` (what ``convert`` and ``csup_async.convert``
take).  Equal bytes is the whole claim: the same values, types (ints stay int64,
int/string fields unions), key order, nulls and missing fields, super types and
chunks.  Chunks and read blocks are made tiny here so that every file crosses
chunk and block boundaries, and a fallback lands mid-file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model.errors import CsupError
from csup_async.writers import ndjson, pyrows
from csup_async.writers.inputs import JsonFile, read_json

pytestmark = pytest.mark.skipif(not ndjson.native_available(),
                                reason="the C JSON parser is not built")


def _both(tmp: Path, text: bytes | str, name: str = "in.ndjson",
          **opts: Any) -> tuple[bytes | str, bytes | str]:
    """(reference, fast) as the file bytes, or the error each raised as text."""
    src = tmp / name
    src.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    out = []
    for data in (lambda: read_json(str(src)), lambda: JsonFile(str(src))):
        dest = tmp / "out.csup"  # one name: errors name it
        try:
            csup_async.write(dest, data(), **opts)
        except (CsupError, ValueError, RecursionError) as e:
            out.append(f"{type(e).__name__}: {e}")
            continue
        out.append(dest.read_bytes())
    return out[0], out[1]


@pytest.fixture(autouse=True)
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyrows, "CHUNK_ROWS", 3)
    monkeypatch.setattr(ndjson, "CHUNK_ROWS", 3)
    monkeypatch.setattr(ndjson, "BLOCK", 17)


# values as json.loads gives them, of the kinds that meet in one field
_scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 70), 1 << 70),
    st.floats(allow_nan=False), st.text(max_size=6),
    st.sampled_from(["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123+01:00", "x"]),
)
_keys = st.sampled_from(["a", "b", "c", "é", "a b", "\u2603"])
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=12)
_rows = st.lists(st.one_of(st.dictionaries(_keys, _values, max_size=5), _values),
                 min_size=0, max_size=12)


def _nested(depth: int) -> Any:
    v: Any = 1
    for _ in range(depth):
        v = [v]
    return v


def _line(v: Any, style: int) -> str:
    text = json.dumps(v, ensure_ascii=bool(style & 1), separators=(",", ":") if style & 2
                      else None)
    return text


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=_rows, style=st.integers(0, 3), blank=st.integers(0, 3),
       crlf=st.booleans(), infer=st.booleans(), last_newline=st.booleans())
def test_random_lines_give_the_reference_file(tmp_path: Path, rows: list[Any], style: int,
                                              blank: int, crlf: bool, infer: bool,
                                              last_newline: bool) -> None:
    nl = "\r\n" if crlf else "\n"
    lines = [_line(r, style) for r in rows]
    if blank:
        lines = [x for r in lines for x in (r, " \t" * (blank - 1))]
    text = nl.join(lines) + (nl if last_newline else "")
    ref, fast = _both(tmp_path, text, infer_times=infer)
    assert fast == ref


@pytest.mark.parametrize("text", [
    # only the Python path decides these: that chunk goes through it
    '{"a":1}\n{"a":18446744073709551615}\n{"a":2}\n{"a":3}\n{"a":4}\n',
    '{"a":1}\n{"a":NaN}\n{"a":-Infinity}\n{"a":Infinity}\n{"a":2}\n',
    '{"a":"x"}\n{"a":"\\ud800"}\n{"a":"\\udc00x"}\n{"a":"y"}\n',
    '{"a":1,"b":2,"a":3}\n{"a":1}\n{"b":1}\n{"a":{"a":1,"b":{"a":2},"a":4}}\n',
    '{"a":1}\n' * 5 + json.dumps({"d": _nested(36)}) + "\n" + json.dumps([_nested(600)]) + "\n",
    '{"a":1}\n{"a":99999999999999999999999999}\n{"a":2}\n',
    # from the line the parser does not take to the end: the reference
    '{"a":1}\n{"a":2}\n{"a":3}\n{"a":4}\n{"a":5,}\n{"a":6}\n',
    '{"a":1}\n{"a":2}\n{"a":3}\n{"a":4}\r{"a":5}\n{"a":6}\n',
    '{"a":1}\n{"a":2}\n{"a":3}\n{"a":"x\u2028y"}\n{"a":"x\u0085"}\n',
    '{"a":1}\n{"a":2}\n{"a":3}\n\u00a0\n\x0c\n{"a":4}\n',
    '{"a":1}\n{"a":2}\n{"a":3}\n{"a":"\ttab"}\n',
    '{"a":1}\n{"a":2}\n{"a":3}\n{"a":01}\n',
    '{"a":1}\n{"a":2}\n{"a":3}\n{"a":1.}\n',
    '{"a":1}\n{"a":2}\n{"a":3}\n{"a":1.5e}\n',
    '{"a":1}\n{"a":2}\n{"a":3}\n[1,2]\n"s"\n3\nnull\ntrue\n',
    # one document: read as read_json reads it (an array is rows, for .json)
    '[{"a":1},{"a":2}]\n',
    '[{"a":1},\n{"a":2}]\n',
    '{"a":\n1}\n',
    '',
    '\n\n  \n',
    '{"a":1}',
    # strings: escapes, UTF-8 of every length, NUL, long ones (2-byte tags)
    '{"s":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u00e9\\u20ac\\ud83d\\ude00"}\n{"s":"é€😀"}\n'
    + json.dumps({"s": "x" * 300}) + "\n" + json.dumps({"s": "é" * 200}) + "\n",
    # numbers at int64's edges, floats that round, -0
    '{"n":9223372036854775807}\n{"n":-9223372036854775808}\n{"n":-0}\n{"n":-0.0}\n'
    '{"n":1e400}\n{"n":2.2250738585072011e-308}\n{"n":0.1}\n{"n":1E+2}\n',
    # an int/float and an int/string field, nested optional objects, arrays
    '{"x":1,"y":"a","u":{"n":"k","g":null}}\n{"x":1.5,"y":2,"u":null}\n'
    '{"y":[1,"a",null,{"q":1}],"u":{"g":{"c":"us"}}}\n{"x":[]}\n{}\n[]\n',
    b'{"a":"\xff"}\n{"a":1}\n{"a":1}\n{"a":1}\n',
    b'\xef\xbb\xbf{"a":1}\n{"a":2}\n',
])
def test_edges_give_the_reference_file(tmp_path: Path, text: str | bytes) -> None:
    for name in ("in.ndjson", "in.json"):
        ref, fast = _both(tmp_path, text, name)
        assert fast == ref, name


def test_fuse_false_and_no_extension_take_the_reference(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    text = '{"a":1}\n{"a":"x","b":null}\n{"b":[1]}\n{"a":2}\n'
    ref, fast = _both(tmp_path, text, fuse=False)
    assert fast == ref
    monkeypatch.setattr(ndjson, "_K", None)
    ref, fast = _both(tmp_path, text)
    assert fast == ref


def test_values_read_back_as_json_gave_them(tmp_path: Path) -> None:
    """What a user checks: each row as json.loads gave it (a missing field is a null)."""
    rows = [{"ts": "2026-01-01T00:00:00Z", "status": 200, "lat": 1, "u": {"name": "a"}},
            {"ts": "2026-01-01T00:00:01Z", "status": "ok", "lat": 1.5, "tags": ["x"]},
            {"status": None, "u": None, "tags": []}]
    src = tmp_path / "in.ndjson"
    src.write_text("\n".join(json.dumps(r) for r in rows * 4) + "\n")
    dest = tmp_path / "out.csup"
    assert csup_async.write(dest, JsonFile(str(src))) == 12
    with csup_async.open_sync(str(dest)) as r:
        back = r.read_rows()
    for got, want in zip(back, rows * 4, strict=True):
        for k in ("ts", "status", "lat", "u", "tags"):
            assert got.get(k) == want.get(k), k
            assert type(got.get(k)) is type(want.get(k)), k  # 200 stays an int, 1 too


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.binary(max_size=12), min_size=0, max_size=30),
       nulls=st.lists(st.booleans(), min_size=30, max_size=30))
def test_string_bounds_in_c_agree_with_numpy(values: list[bytes], nulls: list[bool]) -> None:
    """Segment statistics of strings (min, max) from the C loop equal numpy's."""
    import numpy as np

    from csup_async.writers import segstats

    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    data = np.frombuffer(b"".join(values), np.uint8)
    for valid in (None, np.array(nulls[: len(values)], bool)):
        got = segstats.native_min_max(data, valid, offsets)
        keep = values if valid is None else [v for v, ok in zip(values, valid, strict=True)
                                             if ok]
        want = (min(keep)[: segstats.MAX_BOUND_BYTES + 1],
                max(keep)[: segstats.MAX_BOUND_BYTES + 1]) if keep else None
        assert got == want


def test_an_error_mid_file_stops_the_parsing_thread(tmp_path: Path) -> None:
    """A line the reference refuses, with chunks still being parsed ahead: the error is
    the reference's (with its line number) and no thread is left behind."""
    import threading

    before = threading.active_count()
    text = '{"a":1}\n' * 10 + '{"a":99999999999999999999999999}\n' + '{"a":2}\n' * 200
    ref, fast = _both(tmp_path, text)
    assert isinstance(ref, str) and "line 11" in ref
    assert fast == ref
    assert threading.active_count() == before
