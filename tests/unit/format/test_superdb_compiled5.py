"""CSUP v23 metadata decoded by per-type closures (superdb.compiled5) is exactly what the
generic BSUP version-5 decoder gives: every metadata value of every committed file super
main wrote, and the same value or the same error for each of those bodies cut short,
extended or with a byte changed; and a v23 object's parse is the same nodes either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.format.superdb import bsup5, v23
from csup_async.format.superdb.compiled5 import decoder
from csup_async.model.errors import CsupError

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
FILES = sorted(p for p in REAL.rglob("*.csup") if p.read_bytes()[:5] == b"CSUP\x17")


def _objects(path: Path) -> list[tuple[int, Any, bytes, bytes]]:
    """(offset, header, metadata, types) of each object of the first part of ``path``."""
    raw = path.read_bytes()
    out = []
    off = 0
    while off + v23.OBJECT_HEADER <= len(raw):
        try:
            h = v23.parse_object_header(raw[off:off + v23.OBJECT_HEADER], off)
        except CsupError:
            break  # the footer (or a file broken on purpose)
        start = off + v23.OBJECT_HEADER
        out.append((off, h, raw[start:start + h.meta_size],
                    raw[start + h.meta_size:start + h.meta_size + h.type_size]))
        off += h.object_size
    return out


def _metadata(path: Path) -> list[tuple[Any, Any]]:
    """(type, body) of every metadata value of every object of ``path``."""
    out = []
    for _, _, meta, _ in _objects(path):
        try:
            out += bsup5.read_values(meta)
        except CsupError:
            continue
    return out


VALUES = [v for f in FILES for v in _metadata(f)]


def _outcome(fn: Any) -> str:
    """What ``fn`` gives, as text (a NaN min/max equals itself there)."""
    try:
        return repr(("ok", fn()))
    except CsupError as e:
        return repr(("error", type(e), str(e)))


def test_the_corpus_has_v23_metadata() -> None:
    assert len(FILES) >= 50 and len(VALUES) > 1000


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(REAL).as_posix() for p in FILES])
def test_every_metadata_value_decodes_as_the_generic_decoder(path: Path) -> None:
    for t, body in _metadata(path):
        assert _outcome(lambda t=t, body=body: decoder(t)(body)) == _outcome(
            lambda t=t, body=body: bsup5.decode_value(t, body))


@settings(max_examples=300, deadline=None)
@given(k=st.integers(0, max(len(VALUES) - 1, 0)), data=st.data())
def test_damaged_bodies_give_the_same_value_or_error(k: int, data: st.DataObject) -> None:
    t, body = VALUES[k]
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
    assert _outcome(lambda: decoder(t)(damaged)) == _outcome(
        lambda: bsup5.decode_value(t, damaged))


@settings(max_examples=100, deadline=None)
@given(k=st.integers(0, max(len(FILES) - 1, 0)), data=st.data())
def test_damaged_type_tables_give_the_same_entries_or_error(k: int, data: st.DataObject
                                                            ) -> None:
    """The typedefs table's record fields read in one loop (``bsup5.record_fields``) or
    one by one: the same entries, or the same error, for a damaged table."""
    objs = [o for o in _objects(FILES[k]) if o[3]]
    if not objs:
        return
    table = bsup5.read_values(objs[0][3])[0][1]
    raw = bytearray(table or b"")
    if raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
        raw = raw[:data.draw(st.integers(0, len(raw)))]

    def fast() -> Any:
        t = bsup5.TypeTable()
        t.append_bytes(bytes(raw))
        return t.entries

    def slow() -> Any:
        t = bsup5.TypeTable()
        t.append_bytes(bytes(raw))
        return t.entries

    got = _outcome(fast)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bsup5, "record_fields", lambda *a: None)  # field by field
        assert _outcome(slow) == got
