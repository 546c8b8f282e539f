"""SuperDB v14/v16 vectors made by per-type builders (superdb.fastnodes) and parsed on
first use (meta.LazyNodes) are exactly what the generic path gives: every metadata value
of the committed files ``super`` v0.2.0 and v0.3.0 wrote, and the same node or the same
error for each of those bodies cut short, extended or with a byte changed."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.format.superdb import meta as M
from csup_async.format.superdb.bsup2 import read_values
from csup_async.format.superdb.fastnodes import builder
from csup_async.model.errors import CsupError, FormatError

ROOT = Path(__file__).resolve().parents[2] / "data" / "real"
REAL = ROOT / "super"
FILES = (sorted(REAL.glob("*.csup")) + sorted(REAL.glob("v0.2.0/*.csup"))
         + sorted((ROOT / "conformance" / "super-0.3").glob("*.csup"))[:60])


def _metadata(path: Path) -> list[tuple[Any, Any, Any]]:
    """(type, body, dialect) of every metadata value of every object of ``path``."""
    raw = path.read_bytes()
    out = []
    off = 0
    while off < len(raw):
        try:
            h = M.parse_header(raw[off:off + M.HEADER_SIZE], off)
            start = off + h.size
            vals = read_values(raw[start:start + h.meta_size], h.dialect)
        except CsupError:
            break  # a file broken on purpose past its first objects
        out += [(t, b, h.dialect) for t, b in vals]
        off += h.object_size
    return out


VALUES = [v for f in FILES for v in _metadata(f)]


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except CsupError as e:
        return "error", (type(e), str(e))


def _fast(t: Any, body: Any, dialect: Any) -> tuple[str, Any]:
    """The builder's node of one value, or "refused" (the caller then asks node_of)."""
    build = builder(t, dialect)
    if build is None or body is None:
        return "refused", None
    try:
        return "ok", build(body)
    except Exception:  # any refusal sends the body to node_of
        return "refused", None


def _agrees(t: Any, body: Any, dialect: Any) -> bool:
    fast = _fast(t, body, dialect)
    slow = _outcome(lambda: M.node_of(t, body, "x", dialect))
    # a damaged body may decode to a NaN, unequal to itself: equal texts are the same node
    return fast[0] == "refused" or fast == slow or repr(fast) == repr(slow)


def test_the_corpus_has_every_kind_a_projection_walks() -> None:
    kinds = {t.name for t, _, _ in VALUES}
    assert {"Bytes", "Dict", "Int", "Record", "Const", "Dynamic", "Union", "Array"} <= kinds
    assert sum(builder(t, d) is not None for t, _, d in VALUES) > 0.9 * len(VALUES)


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_every_vector_is_the_generic_paths(path: Path) -> None:
    made = 0
    for t, body, dialect in _metadata(path):
        assert _agrees(t, body, dialect)
        made += _fast(t, body, dialect)[0] == "ok"
    assert made or not _metadata(path)


@settings(max_examples=300, deadline=None)
@given(k=st.integers(0, max(len(VALUES) - 1, 0)), data=st.data())
def test_damaged_bodies_give_the_same_node_or_the_generic_path(k: int, data: st.DataObject
                                                                ) -> None:
    t, body, dialect = VALUES[k]
    raw = bytearray(body or b"")
    how = data.draw(st.sampled_from(["cut", "extend", "flip"]))
    if how == "cut" and raw:
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    elif how == "extend":
        raw += data.draw(st.binary(min_size=1, max_size=4))
    elif raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    assert _agrees(t, memoryview(bytes(raw)), dialect)


def test_a_vector_is_checked_when_first_used() -> None:
    """A child reference that is not to an earlier vector, and a segment past the data
    section, are refused when the vector is made (as the open refused them before)."""
    dyn = next(v for v in VALUES if v[0].name == "Dynamic" and len(v[1]) > 4)
    nodes = M.LazyNodes([dyn[:2]], "obj", dyn[2], 1 << 40)
    with pytest.raises(FormatError, match="refers to vector"):
        nodes[0]
    seg = next(v for v in VALUES if v[0].name == "Bytes")
    with pytest.raises(FormatError, match="runs past the 0-byte data section"):
        M.LazyNodes([seg[:2]], "obj", seg[2], 0)[0]


def test_an_objects_vectors_pickle_whole() -> None:
    """Spark and the caches pickle metadata: the lazy vectors go as the tuple of all."""
    path = next(p for p in FILES if p.parent == REAL and p.stat().st_size > 1000)
    raw = path.read_bytes()
    h = M.parse_header(raw[:M.HEADER_SIZE])
    obj = M.parse_metadata(raw[h.size:h.size + h.meta_size], 0, h)
    again = pickle.loads(pickle.dumps(obj))
    assert isinstance(again.nodes, tuple) and again.nodes == tuple(obj.nodes)
    assert again.length == obj.length and M.root_types(again) == M.root_types(obj)
