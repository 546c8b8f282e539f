"""Seek indexes: which byte ranges of a ``.zng`` data object can hold keys in a range.

``<o>-seek.zng`` holds one entry per chunk: ``{min, max, val_off, val_cnt,
offset, length}``; each chunk is a standalone ZNG stream of ``val_cnt`` rows.
Runs of kept chunks become one range each (the planner's coalescing, as for any
read, turns them into requests).  If every
chunk is pruned the object holds no match: we read nothing (Zed reads the whole
object in that case, which is a quirk, not a contract).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.values import Value
from . import zedtypes as Z
from .errors import LakeError
from .keys import KeyRange, norm

__all__ = ["SeekEntry", "parse_seek_index", "ranges_for"]


@dataclass(frozen=True)
class SeekEntry:
    min: Value | None
    max: Value | None
    val_off: int
    val_cnt: int
    offset: int
    length: int


def parse_seek_index(buf: bytes, path: str, object_size: int | None = None) -> list[SeekEntry]:
    if buf and not Z.ends_with_eos(buf):
        raise LakeError("seek index is torn (no end-of-stream marker)", path=path)
    out: list[SeekEntry] = []
    pos = 0
    for r in Z.read_records(buf, path):
        if not isinstance(r, Z.Record):
            raise LakeError("seek index holds a non-record value", path=path)
        mn, mx = r.value("min", path), r.value("max", path)
        e = SeekEntry(norm(mn), norm(mx),
                      r.get("val_off", path, int), r.get("val_cnt", path, int),
                      r.get("offset", path, int), r.get("length", path, int))
        if e.offset != pos:
            raise LakeError(f"seek index entry at offset {e.offset} does not follow the "
                            f"previous one (which ended at {pos})", path=path)
        pos = e.offset + e.length
        out.append(e)
    if object_size is not None and out and pos != object_size:
        raise LakeError(f"seek index covers {pos} bytes of a {object_size}-byte object",
                        path=path)
    return out


def ranges_for(entries: list[SeekEntry], key_range: KeyRange) -> list[tuple[int, int]]:
    """(offset, length) of each run of chunks the key range does not prune."""
    out: list[tuple[int, int]] = []
    run: list[int] | None = None
    for e in entries:
        if key_range.prunes(e.min, e.max):
            run = None
            continue
        if run is None:
            run = [e.offset, 0]
            out.append((0, 0))
        run[1] += e.length
        out[-1] = (run[0], run[1])
    return out
