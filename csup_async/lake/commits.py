"""Commit objects and the state of a pool at a commit (its live data objects).

A commit object is one ZNG stream: a ``commits.Commit`` record, then actions.
The state at commit C is found by walking parents from C until a commit that
has a cached ``<c>.snap.zng`` (or the start), then playing the commits oldest
first.  At each step the commit and its snapshot are requested together, as
Zed does, so the walk costs one round trip per commit not covered by a
snapshot.  Commits and snapshots are immutable: cached by the LakeIO.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ..model.values import Value
from . import ksuid as K
from . import zedtypes as Z
from .errors import LakeConflictError, LakeError, LakeNotFoundError
from .keys import norm
from .objects import LakeIO

__all__ = ["DataObject", "CommitInfo", "CommitObject", "PoolState", "state_at",
           "parse_commit", "parse_snapshot"]

MAX_WALK = 1_000_000


@dataclass(frozen=True)
class DataObject:
    """A ``data.Object``: one sorted object, its key range (min <= max), rows and size."""

    id: bytes
    min: Value | None
    max: Value | None
    count: int
    size: int

    @property
    def name(self) -> str:
        return K.to_str(self.id)


@dataclass(frozen=True)
class CommitInfo:
    id: bytes
    parent: bytes
    retries: int
    author: str
    date: object
    message: str
    meta: object = None


@dataclass
class CommitObject:
    info: CommitInfo
    actions: list[tuple[str, object]]  # ("Add", DataObject) | ("Delete", id) | ...


@dataclass
class PoolState:
    """Live data objects of a pool at a commit, and which have a columnar copy."""

    objects: dict[bytes, DataObject] = field(default_factory=dict)
    vectors: set[bytes] = field(default_factory=set)
    commits_read: int = 0
    snapshot: bytes | None = None  # the commit whose .snap.zng was the base

    def copy(self) -> PoolState:
        return PoolState(dict(self.objects), set(self.vectors))

    def play(self, kind: str, arg: object, path: str) -> None:
        if kind == "Add":
            assert isinstance(arg, DataObject)
            if arg.id in self.objects:
                raise LakeConflictError(f"adds data object {arg.name} twice", path=path)
            self.objects[arg.id] = arg
        elif kind == "Delete":
            assert isinstance(arg, bytes)
            if self.objects.pop(arg, None) is None:
                raise LakeConflictError(f"deletes data object {K.to_str(arg)}, which is not "
                                        "live", path=path)
        elif kind == "AddVector":
            assert isinstance(arg, bytes)
            self.vectors.add(arg)
        elif kind == "DeleteVector":
            assert isinstance(arg, bytes)
            self.vectors.discard(arg)
        # AddIndex/DeleteIndex (search indexes): not used for reading


def data_object(r: Z.Record, path: str) -> DataObject:
    mn, mx = r.value("min", path), r.value("max", path)
    count = r.get("count", path, int)
    size = r.get("size", path, int)
    return DataObject(r.ksuid("id", path), norm(mn), norm(mx), count, size)


def _action(r: Z.Record, path: str) -> tuple[str, object] | None:
    kind = (r.name or "").rsplit(".", 1)[-1]
    if not kind:  # unnamed: tell by the fields
        kind = ("Add" if "object" in r.values else "Commit" if "parent" in r.values
                else "Delete" if "id" in r.values else "")
    if kind == "Add":
        return "Add", data_object(r.sub("object", path), path)
    if kind in ("Delete", "AddVector", "DeleteVector"):
        return kind, r.ksuid("id", path)
    if kind in ("AddIndex", "DeleteIndex"):
        return None
    raise LakeError(f"unknown commit action {r.name!r}", path=path)


def parse_commit(buf: bytes, path: str) -> CommitObject:
    if not Z.ends_with_eos(buf):
        raise LakeError("commit object is torn (no end-of-stream marker)", path=path)
    it = Z.read_records(buf, path)
    first = next(it, None)
    if not isinstance(first, Z.Record) or "parent" not in first.values:
        raise LakeError("first record of a commit object is not a commits.Commit", path=path)
    info = CommitInfo(first.ksuid("id", path), first.ksuid("parent", path),
                      first.get("retries", path, int), first.get("author", path, str),
                      first.get("date", path), first.get("message", path, str),
                      first.values.get("meta"))
    actions = []
    for r in it:
        if not isinstance(r, Z.Record):
            raise LakeError("commit object holds a non-record value", path=path)
        a = _action(r, path)
        if a is not None:
            actions.append(a)
    return CommitObject(info, actions)


def parse_snapshot(buf: bytes, path: str) -> PoolState:
    state = PoolState()
    if not buf:
        return state  # the empty state is a 0-byte file
    if not Z.ends_with_eos(buf):
        raise LakeError("commit snapshot is torn (no end-of-stream marker)", path=path)
    for r in Z.read_records(buf, path):
        if not isinstance(r, Z.Record):
            raise LakeError("commit snapshot holds a non-record value", path=path)
        a = _action(r, path)
        if a is not None:
            state.play(*a, path)
    return state


def commit_rel(pool_dir: str, c: bytes) -> str:
    return f"{pool_dir}/commits/{K.to_str(c)}.zng"


def snap_rel(pool_dir: str, c: bytes) -> str:
    return f"{pool_dir}/commits/{K.to_str(c)}.snap.zng"


async def get_commit(io: LakeIO, pool_dir: str, c: bytes) -> CommitObject:
    rel = commit_rel(pool_dir, c)
    buf = await io.get_or_none(rel, immutable=True)
    if buf is None:
        raise LakeNotFoundError("commit object is missing", path=io.display(rel))
    return _commit_of(io, rel, buf, c)


def _commit_of(io: LakeIO, rel: str, buf: bytes, c: bytes) -> CommitObject:
    obj = parse_commit(buf, io.display(rel))
    if obj.info.id != c:
        raise LakeError(f"commit object names itself {K.to_str(obj.info.id)}",
                        path=io.display(rel))
    return obj


async def state_at(io: LakeIO, pool_dir: str, commit: bytes,
                   cache: dict[bytes, PoolState] | None = None) -> PoolState:
    """The live objects at ``commit`` (nil: the empty state)."""
    chain: list[CommitObject] = []
    seen: set[bytes] = set()
    base: PoolState | None = None
    base_id: bytes | None = None
    at = commit
    while at != K.NIL:
        if cache is not None and at in cache:
            base, base_id = cache[at], at
            break
        if at in seen:
            raise LakeError(f"commit {K.to_str(at)} is its own ancestor (a cycle in parents)",
                            path=io.display(commit_rel(pool_dir, at)))
        if len(seen) >= MAX_WALK:
            raise LakeError(f"more than {MAX_WALK} commits", path=io.display(pool_dir))
        seen.add(at)
        srel = snap_rel(pool_dir, at)
        # already read (here or, with a disk cache, by an earlier process): a snapshot
        # or the commit itself answers with no request; both give the same state, so
        # a cached commit needs no probe for a snapshot written since
        snap = io.peek(srel)
        if snap is not None:
            base, base_id = parse_snapshot(snap, io.display(srel)), at
            break
        crel = commit_rel(pool_dir, at)
        known = io.peek(crel)
        if known is not None:
            obj = _commit_of(io, crel, known, at)
            chain.append(obj)
            at = obj.info.parent
            continue
        snap_t = asyncio.ensure_future(io.get_or_none(srel, immutable=True, probe=True))
        obj_t = asyncio.ensure_future(get_commit(io, pool_dir, at))
        try:
            snap = await snap_t
        except BaseException:
            obj_t.cancel()
            raise
        if snap is not None:
            obj_t.cancel()
            await asyncio.gather(obj_t, return_exceptions=True)
            base, base_id = parse_snapshot(snap, io.display(srel)), at
            break
        obj = await obj_t
        chain.append(obj)
        at = obj.info.parent
    state = base.copy() if base is not None else PoolState()
    state.snapshot = base_id
    for obj in reversed(chain):
        path = io.display(commit_rel(pool_dir, obj.info.id))
        for kind, arg in obj.actions:
            state.play(kind, arg, path)
    state.commits_read = len(chain)
    if cache is not None:
        cache[commit] = state
    return state
