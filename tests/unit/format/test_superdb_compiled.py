"""SuperDB metadata decoded by per-type closures (superdb.compiled) is exactly what the
generic decoder gives: every metadata value of the committed files ``super`` v0.2.0 and
v0.3.0 wrote, and the same value or the same error for each of those bodies cut short,
extended or with a byte changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.format.superdb import meta as M
from csup_async.format.superdb.bsup2 import decode_value, read_values
from csup_async.format.superdb.compiled import decoder
from csup_async.model.errors import CsupError

REAL = Path(__file__).resolve().parents[2] / "data" / "real" / "super"
FILES = sorted(REAL.glob("*.csup")) + sorted(REAL.glob("v0.2.0/*.csup"))


def _metadata(path: Path) -> list[tuple[Any, Any, Any]]:
    """(type, body, dialect) of every metadata value of every object of ``path``."""
    raw = path.read_bytes()
    out = []
    off = 0
    while off < len(raw):
        try:
            h = M.parse_header(raw[off:off + M.HEADER_SIZE], off)
        except CsupError:
            break  # a file broken on purpose past its first objects
        start = off + h.size
        try:
            vals = read_values(raw[start:start + h.meta_size], h.dialect)
        except CsupError:
            break
        out += [(t, b, h.dialect) for t, b in vals]
        off += h.object_size
    return out


VALUES = [v for f in FILES for v in _metadata(f)]


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except CsupError as e:
        return "error", (type(e), str(e))


def test_the_corpus_has_metadata() -> None:
    assert len(FILES) >= 8 and len(VALUES) > 100


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_every_metadata_value_decodes_as_the_generic_decoder(path: Path) -> None:
    for t, body, dialect in _metadata(path):
        want = decode_value(t, body, typed=True, dialect=dialect)
        assert decoder(t, dialect)(body) == want


@settings(max_examples=300, deadline=None)
@given(k=st.integers(0, max(len(VALUES) - 1, 0)), data=st.data())
def test_damaged_bodies_give_the_same_value_or_error(k: int, data: st.DataObject) -> None:
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
    damaged = memoryview(bytes(raw))
    fast = _outcome(lambda: decoder(t, dialect)(damaged))
    slow = _outcome(lambda: decode_value(t, damaged, typed=True, dialect=dialect))
    assert fast == slow
