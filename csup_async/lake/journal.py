"""Journals (``pools/``, ``<pool>/branches/``): HEAD, TAIL, numbered entries, ``snap.zng``.

Replaying a journal to ID J gives a name -> entry map.  All reads that do not
depend on each other go out together: HEAD, TAIL and ``snap.zng`` in one
round, then every entry from the snapshot (or TAIL) to HEAD at once.  HEAD is
a hint that can lag the real end (a writer puts the entry, then HEAD), so the
entry after HEAD is probed in the same round and followed while it exists.

HEAD is also untrusted input: a span longer than LIST_ABOVE entries is checked
against what the store lists before anything is fetched, and no replay reads
more than ``max_journal_entries`` (a LakeError past it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.errors import AccessDeniedError, NotFoundError
from ..model.types import UINT64
from ..model.values import Value
from . import zedtypes as Z
from .errors import LakeError, LakeNotFoundError
from .objects import LakeIO, gather_all

__all__ = ["JournalState", "read_journal", "parse_id_file"]

#: Spans longer than this are checked against a listing before any entry is fetched.
LIST_ABOVE = 1024
#: Entries requested at once (each chunk in one round, memory bounded by it).
FETCH_CHUNK = 4096


@dataclass
class JournalState:
    """A journal replayed to ``at``: entries by name, each a Record (with its type)."""

    dir: str
    at: int
    head: int
    tail: int
    entries: dict[str, Z.Record] = field(default_factory=dict)
    snapshot_at: int | None = None  # the snap.zng used, if any


def parse_id_file(data: bytes, path: str, parts: int) -> list[int]:
    try:
        words = data.decode("ascii").split()
        ids = [int(w) for w in words]
    except (UnicodeDecodeError, ValueError):
        ids = []
    if not 1 <= len(ids) <= parts or any(i < 0 for i in ids):
        raise LakeError(f"not a journal ID file: {data[:40]!r}", path=path)
    return ids


async def _id_file(io: LakeIO, rel: str, parts: int) -> list[int]:
    try:
        data = await io.get(rel)
    except NotFoundError:
        raise LakeNotFoundError("no such journal file (not a lake, or not this layout)",
                        path=io.display(rel)) from None
    return parse_id_file(data, io.display(rel), parts)


async def read_journal(io: LakeIO, dir: str, at: int | None = None) -> JournalState:
    """Replay the journal in ``dir`` to ``at`` (default: its real end)."""
    (head,), tail_ids, snap = await gather_all([
        _id_file(io, f"{dir}/HEAD", 1), _id_file(io, f"{dir}/TAIL", 2),
        io.get_or_none(f"{dir}/snap.zng", probe=True)])
    tail = tail_ids[0]
    state = JournalState(dir, 0, head, tail)
    start = tail
    if snap is not None:
        snap_at, entries = _read_snapshot(snap, io.display(f"{dir}/snap.zng"))
        if at is None or snap_at <= at:
            state.entries = entries
            state.snapshot_at = snap_at
            start = max(start, snap_at + 1)
    stop = head if at is None else at  # an ``at`` past HEAD: the entries decide
    await _check_span(io, dir, start, stop, head, at)
    probe = at is None
    bodies: dict[int, Any] = {}
    for lo in range(start, stop + 1, FETCH_CHUNK):  # bounded memory for long journals
        hi = min(stop, lo + FETCH_CHUNK - 1)
        bodies.update(await _fetch(io, dir, list(range(lo, hi + 1)),
                                   stop + 1 if probe and hi == stop else None))
    end = stop
    if probe:
        # HEAD lagged: follow the entries that exist past it
        while bodies.get(end + 1) is not None:
            end += 1
            if end - start + 1 > io.max_journal_entries:
                raise _too_long(io, dir, end - start + 1)
            nxt = await io.get_or_none(f"{dir}/{end + 1}.zng", immutable=True, probe=True)
            if nxt is not None:
                bodies[end + 1] = nxt
    for i in range(start, end + 1):
        body = bodies.get(i)
        rel = f"{dir}/{i}.zng"
        if body is None:
            if at is not None and i > head:
                raise LakeNotFoundError(f"journal ID {at} is past the end of the journal "
                                        f"(HEAD {head})", path=io.display(rel))
            raise LakeNotFoundError(f"journal entry {i} is missing (TAIL {tail}, HEAD {head})",
                                    path=io.display(rel))
        _apply(state, body, io.display(rel))
    state.at = end
    return state


def _too_long(io: LakeIO, dir: str, n: int) -> LakeError:
    return LakeError(f"the journal asks for {n:,} entries, more than the limit of "
                     f"{io.max_journal_entries:,} (max_journal_entries= raises it)",
                     path=io.display(dir))


async def _check_span(io: LakeIO, dir: str, start: int, stop: int, head: int,
                      at: int | None) -> None:
    """Refuse a HEAD (or ``at``) that names more entries than the limit, or than the store
    holds: a hostile or corrupt HEAD of 10**12 must not become 10**12 requests.

    Long spans are checked against a listing of the journal (one request per 1,000
    keys); a store that cannot list has the last entry probed instead."""
    n = stop - start + 1
    if n > io.max_journal_entries:
        raise _too_long(io, dir, n)
    if n <= LIST_ABOVE:
        return
    what = f"journal ID {at}" if at is not None else f"HEAD {head}"
    try:
        keys = await io.list(f"{dir}/")
    except (LakeError, AccessDeniedError):  # a store that cannot list: probe the last entry
        last = await io.get_or_none(f"{dir}/{stop}.zng", immutable=True, probe=True)
        if last is None:
            raise LakeError(f"{what} names entry {stop}, which does not exist",
                            path=io.display(f"{dir}/{stop}.zng")) from None
        return
    have = set()
    for k in keys:
        name = k.rsplit("/", 1)[-1]
        if name.endswith(".zng") and name[:-4].isdigit():
            have.add(int(name[:-4]))
    missing = next((i for i in (stop, start) if i not in have), None)
    if missing is None and len(have.intersection(range(start, stop + 1))) < n:
        missing = next(i for i in range(start, stop + 1) if i not in have)
    if missing is not None:
        raise LakeError(f"{what} names {n:,} entries from {start}, but entry {missing} does "
                        f"not exist ({len(have):,} entries listed)",
                        path=io.display(f"{dir}/{missing}.zng"))


async def _fetch(io: LakeIO, dir: str, ids: list[int], probe: int | None) -> dict[int, Any]:
    """Entries by ID (None where absent), all requested at once with the ``probe`` entry
    (the one after HEAD, usually absent)."""
    want = ids + ([probe] if probe is not None else [])
    res = await gather_all([io.get_or_none(f"{dir}/{i}.zng", immutable=True, probe=i == probe)
                            for i in want])
    return dict(zip(want, res, strict=True))


def _read_snapshot(buf: bytes, path: str) -> tuple[int, dict[str, Z.Record]]:
    it = Z.read_records(buf, path)
    first = next(it, None)
    if not isinstance(first, Value) or first.type != UINT64 or first.value is None:
        raise LakeError("journal snapshot does not start with a uint64 journal ID", path=path)
    entries: dict[str, Z.Record] = {}
    for r in it:
        if not isinstance(r, Z.Record):
            raise LakeError("journal snapshot holds a non-record value", path=path)
        name = r.get("name", path, str)
        entries[name] = r
    if not Z.ends_with_eos(buf):
        raise LakeError("journal snapshot is torn (no end-of-stream marker)", path=path)
    return int(first.value), entries


def _apply(state: JournalState, body: bytes, path: str) -> None:
    if not Z.ends_with_eos(body):
        raise LakeError("journal entry is torn (no end-of-stream marker)", path=path)
    n = 0
    for r in Z.read_records(body, path):
        n += 1
        if not isinstance(r, Z.Record):
            raise LakeError("journal entry holds a non-record value", path=path)
        kind = (r.name or "").rsplit(".", 1)[-1]
        if kind in ("Add", "Update") or (not r.name and "entry" in r.values):
            entry = r.sub("entry", path)
            name = entry.get("name", path, str)
            if kind == "Update" and name not in state.entries:
                raise LakeError(f"journal updates {name!r}, which does not exist", path=path)
            state.entries[name] = entry
        elif kind == "Delete" or "entry_key" in r.values:
            state.entries.pop(r.get("entry_key", path, str), None)
        else:
            raise LakeError(f"journal entry holds an unknown record {r.name!r}", path=path)
    if n == 0:
        raise LakeError("journal entry is empty", path=path)
