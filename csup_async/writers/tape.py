"""NDJSON's token tape (from the C reader in csup_async/writers/_wkernels.c) shredded into the
very columns :mod:`csup_async.writers.pycolumns` builds from Python values, and written in
chunks like Python rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..decode.kernels import copy_ranges
from ..model.types import (
    STRING,
    ArrayType,
    Field,
    RecordType,
    Type,
)
from .fuse import fuse_all
from .pycolumns import (
    K_BOOL,
    K_DICT,
    K_FLOAT,
    K_INT,
    K_LIST,
    K_NONE,
    K_STR,
    K_TIME,
    MAX_DEPTH,
    MAX_FUSED_KEYS,
    PRIM_TYPE,
    Column,
    Fixed,
    How,
    Lists,
    Nulls,
    Part,
    Records,
    Unhandled,
    VarBinary,
    as_times,
    gather_ranges,
)
from .pyrows import Chunk, write_chunk
from .tagenc import (
    Encoded,
)
from .writer import Writer

__all__ = ["Tape", "shred_tape", "write_tape"]

#: The tape's kinds (csup_async/writers/_wkernels.c) as this module's value kinds.
_TAPE_KIND = np.array([K_NONE, K_BOOL, K_BOOL, K_INT, K_FLOAT, K_STR, K_DICT, K_LIST], np.int8)
_TAPE_TRUE = 2


class Tape:
    """A chunk of JSON lines parsed by ``csup_async.writers._wkernels.tape``: one entry per value in
    document order (kind, parent, key, val, slen), the strings' bytes and the keys."""

    def __init__(self, kind: bytes, parent: bytes, key: bytes, val: bytes, slen: bytes,
                 sdata: bytes, keys: list[str]) -> None:
        self.kind = np.frombuffer(kind, np.uint8)
        self.codes = _TAPE_KIND[self.kind]
        self.parent = np.frombuffer(parent, np.int32).astype(np.int64)
        self.key = np.frombuffer(key, np.int32)
        self.val = np.frombuffer(val, np.int64)
        self.slen = np.frombuffer(slen, np.int32).astype(np.int64)
        self.sdata = np.frombuffer(sdata, np.uint8)
        self.keys = keys
        self.rows = np.flatnonzero(self.parent < 0)
        member = self.key >= 0
        # members and elements grouped by their parent (in document order within one):
        # the children of any set of objects or arrays are ranges of these
        self.members = self._grouped(np.flatnonzero(member))
        self.elems = self._grouped(np.flatnonzero(~member & (self.parent >= 0)))

    def _grouped(self, among: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = among[np.argsort(self.parent[among], kind="stable")]
        return order, self.parent[order]

    def children(self, among: tuple[np.ndarray, np.ndarray], parents: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The children (members or elements: ``among``) of the objects or arrays at
        ``parents`` (ascending), in document order, and the position of each one's
        parent in ``parents``."""
        grouped, by = among
        counts = self.val[parents]
        picked = gather_ranges(np.searchsorted(by, parents), counts)
        return grouped[picked], np.repeat(np.arange(parents.size, dtype=np.int64), counts)

    def encoded(self, idx: np.ndarray) -> Encoded:
        """The strings at ``idx`` tag-encoded (the tape holds them so: one gather)."""
        sizes = self.slen[idx] + _tag_bytes(self.slen[idx] + 1)
        return Encoded(copy_ranges(self.sdata, self.val[idx], sizes), np.cumsum(sizes))

    def texts(self, idx: np.ndarray) -> list[str]:
        """The strings at ``idx`` as Python strs (for ``infer_times``)."""
        enc = self.encoded(idx)
        blob = enc.data.tobytes()
        lengths = self.slen[idx]
        starts = (enc.ends - lengths).tolist()
        return [blob[a: a + n].decode() for a, n in zip(starts, lengths.tolist(), strict=True)]


def _tag_bytes(tag: np.ndarray) -> np.ndarray:
    """Bytes of each uvarint."""
    n = np.ones(tag.size, np.int64)
    for j in range(1, 10):
        more = tag >= (1 << (7 * j))
        if not more.any():
            break
        n += more
    return n


def _tape_column(tp: Tape, idx: np.ndarray, depth: int, how: How) -> Column:
    """The :class:`Column` ``Column(values, depth, how)`` builds, for the values at tape
    entries ``idx`` (-1: a missing field, a None): fusing only."""
    if depth > MAX_DEPTH:
        raise Unhandled("deep")
    n = idx.size
    col = Column.__new__(Column)
    missing = idx < 0
    any_missing = bool(missing.any())
    codes = tp.codes[idx]
    if any_missing:
        codes = np.where(missing, np.int8(K_NONE), codes)
    present = np.flatnonzero(np.bincount(codes, minlength=len(PRIM_TYPE) + 2)) if n else (
        np.zeros(0, np.int64))
    col.codes = codes
    col.parts = {}
    col.kind_pos = np.zeros(n, np.int64)
    index: dict[Type, int] = {}
    col.ids = np.zeros(n, np.int64)
    for k in present.tolist():
        if len(present) == 1:
            sub = idx
            col.kind_pos = np.arange(n, dtype=np.int64)
        else:
            sel = np.flatnonzero(codes == k)
            col.kind_pos[sel] = np.arange(sel.size, dtype=np.int64)
            sub = idx[sel]
        part = _tape_part(tp, k, sub, depth, how)
        if k == K_STR and how.times and K_TIME not in col.parts:
            times = as_times(tp.texts(sub))
            if times is not None:
                part, k = times, K_TIME
                codes[codes == K_STR] = K_TIME
        col.parts[k] = part
        index.setdefault(part.types[0], len(index))  # fusing: one type a part, ids zero
    col.types = list(index)
    col.fused = fuse_all(col.types)
    return col


def _tape_part(tp: Tape, kind: int, sub: np.ndarray, depth: int, how: How) -> Part:
    n = sub.size
    if kind == K_NONE:
        return Nulls(n)
    if kind == K_STR:
        part: Part = VarBinary.__new__(VarBinary)
        part.types = [STRING]
        part.ids = np.zeros(n, np.int64)
        part.enc = tp.encoded(sub)  # type: ignore[attr-defined]
        return part
    if kind == K_DICT:
        return _tape_records(tp, sub, depth, how)
    if kind == K_LIST:
        return _tape_lists(tp, sub, depth, how)
    fixed = Fixed.__new__(Fixed)
    fixed.kind = kind
    fixed.types = [PRIM_TYPE[kind]]
    fixed.ids = np.zeros(n, np.int64)
    if kind == K_INT:
        fixed.values = tp.val[sub]
    elif kind == K_FLOAT:
        fixed.values = tp.val[sub].view(np.float64)
    else:
        fixed.values = (tp.kind[sub] == _TAPE_TRUE).astype(np.uint8)
    return fixed


def _tape_records(tp: Tape, sub: np.ndarray, depth: int, how: How) -> Records:
    """Objects fused as :meth:`Records._fuse` fuses dicts: a column per key, keys in
    order of first appearance (what ``dict.fromkeys`` over their key tuples gives)."""
    rec = Records.__new__(Records)
    members, where = tp.children(tp.members, sub)
    mkeys = tp.key[members]
    # each key's first member (the last write of a reversed assignment wins)
    first = np.full(len(tp.keys), -1, np.int64)
    first[mkeys[::-1]] = np.arange(mkeys.size - 1, -1, -1, dtype=np.int64)
    present = np.flatnonzero(first >= 0)
    if present.size > MAX_FUSED_KEYS:
        raise Unhandled("keys")
    keys = present[np.argsort(first[present], kind="stable")].tolist()
    if len(keys) > 32:  # many keys: group the members by key once
        order = np.argsort(mkeys.astype(np.int16 if len(tp.keys) < 1 << 15 else np.int32),
                           kind="stable")
        ranked = mkeys[order]
        los = np.searchsorted(ranked, keys, "left")
        his = np.searchsorted(ranked, keys, "right")
    fused: dict[str, Column] = {}
    for j, k in enumerate(keys):
        if len(keys) > 32:
            pick = order[los[j]: his[j]]
        else:
            pick = np.flatnonzero(mkeys == k)
        idx = np.full(sub.size, -1, np.int64)
        idx[where[pick]] = members[pick]
        fused[tp.keys[k]] = _tape_column(tp, idx, depth + 1, how)
    rec.fused = fused
    rec.types = [RecordType(tuple(Field(k, c.fused) for k, c in fused.items()))]
    rec.ids = np.zeros(sub.size, np.int64)
    return rec


def _tape_lists(tp: Tape, sub: np.ndarray, depth: int, how: How) -> Lists:
    lists = Lists.__new__(Lists)
    n = sub.size
    lists.lengths = tp.val[sub]
    lists.starts = np.zeros(n, np.int64)
    if n:
        np.cumsum(lists.lengths[:-1], out=lists.starts[1:])
    lists.elems = _tape_column(tp, tp.children(tp.elems, sub)[0], depth + 1, how)
    lists.types = [ArrayType(lists.elems.fused)]
    lists.ids = np.zeros(n, np.int64)
    return lists


def shred_tape(tape: Tape, infer_times: bool) -> object | None:
    """A chunk of JSON rows typed and shredded from its tape (fusing) for
    :func:`write_tape`, or None where only the Python-value path decides."""
    try:
        return _tape_column(tape, tape.rows, 0, How(True, infer_times))
    except (Unhandled, RecursionError):
        return None


def write_tape(w: Writer, shredded: object | None, open_types: dict[int, Type],
               infer_times: bool, rows: Callable[[], list[Any]]) -> None:
    """Write a chunk of JSON rows shredded by :func:`shred_tape`, fusing, as
    :func:`write_chunks` writes the same rows as Python values (``rows()`` gives them,
    for a chunk ``shredded`` None: what only that path takes)."""
    if shredded is None:
        write_chunk(w, rows(), open_types, infer_times)
        return
    assert isinstance(shredded, Column)
    chunk = Chunk([], open_types, infer_times, col=shredded)
    w.add_rows(shredded.codes.size, chunk.batch)
