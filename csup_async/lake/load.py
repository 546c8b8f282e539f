"""Commit rows to a pool's branch, as zed v1.7.0 does, safely under concurrent writers.

1. Sort the rows by the pool key (Zed's order: nulls last, ties by the row's
   bytes; desc reverses all), cut them into objects at the pool's threshold.
2. Write each ``<o>.zng`` (a new ZNG stream every ``seek_stride`` bytes of
   key, as zed's writer does) with its ``<o>-seek.zng``; optionally a
   ``<o>.csup`` copy (the same rows in the same order).
3. Replay the branch journal to its real end E, write a commit object whose
   parent is the branch's commit, then put ``journal.Update`` as entry E+1
   with put-if-absent.  Losing that race means another writer moved the
   journal: replay again and retry with a new commit object (its ``retries``
   counts the attempts).  Then HEAD (a hint), and ``snap.zng`` when more
   than 10 entries follow the last snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import io as _io
import random
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..format import bsup
from ..model.errors import CsupError, EncodeError
from ..model.types import NULL, UINT64, Type
from ..model.values import Value, infer_type
from . import ksuid as K
from . import zedtypes as Z
from .commits import commit_rel
from .errors import LakeConflictError, LakeNotFoundError
from .journal import read_journal
from .keys import family, key_of, norm, sort_key
from .objects import gather_all

if TYPE_CHECKING:
    from .config import PoolConfig
    from .objects import LakeHandle

__all__ = ["load", "encode_object", "MAX_ATTEMPTS"]

MAX_ATTEMPTS = 64
SNAPSHOT_EVERY = 10


def _rows(data: Any) -> list[tuple[Type, Any]]:
    if hasattr(data, "to_pylist") and not isinstance(data, list):
        data = data.to_pylist()
    out: list[tuple[Type, Any]] = []
    for i, r in enumerate(data if isinstance(data, Iterable) else ()):
        if isinstance(r, Value):
            t, v = r.type, r.value
        elif isinstance(r, dict):
            try:
                t, v = infer_type(r), r
            except CsupError as e:
                raise EncodeError(f"row {i}: {e.message}") from None
        else:
            raise EncodeError(f"row {i} is a {type(r).__name__}, not a dict or Value")
        out.append((t, v))
    if not out:
        raise CsupError("nothing to load: no rows (zed refuses an empty transaction too)")
    return out


def _kv(k: Value | None) -> tuple[Type, Any]:
    return (NULL, None) if k is None else (k.type, k.value)


def encode_object(rows: list[tuple[Type, Any, bytes | None, Value | None]], order: str,
                  stride: int, version: int = 0
                  ) -> tuple[bytes, bytes, Value | None, Value | None]:
    """(object bytes, seek index bytes, min, max) of sorted rows (type, value, body, key),
    in BSUP ``version`` (0 for a Zed lake; a SuperDB database's otherwise)."""
    out = bytearray()
    enc = Z.stream_encoder(out, version)
    entries: list[tuple[Value | None, Value | None, int, int, int, int]] = []
    trigger, first_key, seek_min = 0, None, None
    val_off, off = 0, 0
    last_key: Value | None = None
    n = 0
    for t, v, body, k in rows:
        if version:
            enc.write(t, v)
        else:
            enc.write_body(t, body)
        n += 1
        last_key = k
        kt, kv = _kv(k)
        kb = bsup.encode_value(kt, kv) if kv is not None else None
        trigger += len(kb) if kb is not None else 0
        if n == 1:
            first_key = k
        if seek_min is None:
            seek_min = (k,)
        if trigger >= stride:
            enc.end_stream()
            mn, mx = seek_min[0], k
            if order == "desc":
                mn, mx = mx, mn
            entries.append((mn, mx, val_off, n - val_off, off, len(out) - off))
            val_off, off, trigger, seek_min = n, len(out), 0, None
    if seek_min is not None:  # rows since the last stream ended (zed writes no empty EOS)
        enc.end_stream()
        mn, mx = seek_min[0], last_key
        if order == "desc":
            mn, mx = mx, mn
        entries.append((mn, mx, val_off, n - val_off, off, len(out) - off))
    omin, omax = (last_key, first_key) if order == "desc" else (first_key, last_key)
    seek = bytearray()
    senc = Z.stream_encoder(seek, version)
    for mn, mx, vo, vc, o, ln in entries:
        (mnt, mnv), (mxt, mxv) = _kv(mn), _kv(mx)
        senc.write(Z.seek_entry_t(mnt, mxt), {"min": mnv, "max": mxv, "val_off": vo,
                                              "val_cnt": vc, "offset": o, "length": ln})
    senc.end_stream()
    if version == 5:  # super main's objects have no seek index (its pools no seek stride)
        seek = bytearray()
    return bytes(out), bytes(seek), omin, omax


def sorted_rows(cfg: PoolConfig, rows: list[tuple[Type, Any]]
                ) -> list[tuple[Type, Any, bytes | None, Value | None]]:
    """``rows`` in the pool's key order (``cfg.key``, ``cfg.order``), each with its BSUP
    body and normalised key, as zed sorts a load (the property tests check the order)."""
    enc = [(t, v, bsup.encode_value(t, v), norm(key_of(v, t, cfg.key))) for t, v in rows]
    desc = cfg.order == "desc"
    families = {family(r[3].type) for r in enc if r[3] is not None}
    kinds = {type(r[3].value) for r in enc if r[3] is not None}
    if len(families) == 1 and len(kinds) == 1 and kinds <= {int, float, str, bytes}:
        # one family of plain scalars (the usual case): a native sort key, nulls last
        enc.sort(key=lambda r: (0, r[3].value, r[2] or b"") if r[3] is not None
                 else (1, 0, r[2] or b""), reverse=desc)
    else:
        enc.sort(key=lambda r: (sort_key(r[3]), r[2] or b""), reverse=desc)
    return enc


def _split(rows: list[Any], threshold: int) -> list[list[Any]]:
    parts: list[list[Any]] = [[]]
    size = 0
    for r in rows:
        n = len(r[2] or b"") + 2
        if parts[-1] and size + n > threshold:
            parts.append([])
            size = 0
        parts[-1].append(r)
        size += n
    return parts


def _csup_bytes(rows: list[tuple[Type, Any, Any, Any]], target: str = "super") -> bytes:
    """The ``.csup`` copy in ``target``'s layout (a SuperDB database's default is CSUP
    v16, what ``super db vector add`` of super v0.3.0 writes; a Zed lake's is the
    default target's)."""
    buf = _io.BytesIO()
    if target not in ("csup-async", "super"):
        from ..writers.targets.output import write_csup

        write_csup(buf, [Value(t, v) for t, v, _, _ in rows], target)
        return buf.getvalue()
    from ..writers.writing import write

    write(buf, [Value(t, v) for t, v, _, _ in rows], target=target)
    return buf.getvalue()


async def load(lake: LakeHandle, cfg: PoolConfig, branch: str, data: Any, *, message: str = "",
               author: str = "", csup: bool = False, meta: Any = None,
               target: str | None = None) -> str:
    from ..writers.targets import resolve

    io = lake.io
    if target is None:  # a SuperDB database's own version; else the one default target
        target = ("super" if io.bsup_version == 5 else "super-0.3") if io.is_superdb \
            else None
    target = resolve(target).name  # an unknown name fails before anything is written
    pool_dir = cfg.id_str
    rows = await asyncio.to_thread(_rows, data)
    version = io.bsup_version
    if io.is_superdb:  # SuperDB's values: no typed nulls (csup_async.targets.supermodel)
        from ..writers.targets.supermodel import to_super

        rows = [to_super(t, v) for t, v in rows]
    srows = await asyncio.to_thread(sorted_rows, cfg, rows)
    objects: list[dict[str, Any]] = []
    writes = []
    for part in _split(srows, max(cfg.threshold, 1)):
        zng, seek, mn, mx = await asyncio.to_thread(encode_object, part, cfg.order,
                                                    cfg.seek_stride or 65536, version)
        oid = K.new()
        name = K.to_str(oid)
        objects.append({"id": oid, "min": mn, "max": mx, "count": len(part),
                        "size": len(zng)})
        writes.append(io.put(f"{pool_dir}/data/{name}.zng", zng))
        if seek:
            writes.append(io.put(f"{pool_dir}/data/{name}-seek.zng", seek))
        if csup:
            writes.append(io.put(f"{pool_dir}/data/{name}.csup",
                                 await asyncio.to_thread(_csup_bytes, part, target)))
    await gather_all(writes)
    if not message:
        message = f"loaded {len(objects)} data object{'s' if len(objects) != 1 else ''}\n"
    bdir = f"{pool_dir}/branches"
    for attempt in range(MAX_ATTEMPTS):
        journal = await read_journal(io, bdir)
        entry = journal.entries.get(branch)
        if entry is None:
            raise LakeNotFoundError(f"pool {cfg.name!r} has no branch {branch!r}",
                                    path=io.display(bdir))
        parent = entry.ksuid("commit", io.display(bdir))
        commit = K.new()
        await io.put(commit_rel(pool_dir, commit),
                     commit_object(commit, parent, attempt, author, message, objects,
                                   version, vectors=csup and io.is_superdb))
        ts = entry.values.get("ts")
        update = Z.encode([(Z.journal_add(Z.BRANCH_CONFIG, "Update"), {"entry": {
            "ts": ts if ts is not None else np.datetime64(0, "ns"), "name": branch,
            "commit": commit}})], version)
        nxt = journal.at + 1
        if await io.put_if_absent(f"{bdir}/{nxt}.zng", update):
            await io.put(f"{bdir}/HEAD", str(nxt).encode())
            if nxt - (journal.snapshot_at or 0) > SNAPSHOT_EVERY:
                await _journal_snapshot(lake, bdir, journal.entries, branch, ts, commit, nxt)
            return K.to_str(commit)
        # another writer took entry nxt: our commit object is orphaned (never referenced)
        await asyncio.sleep(random.uniform(0, min(0.2, 0.005 * 2 ** attempt)))
    raise LakeConflictError(f"branch {branch!r} moved under each of {MAX_ATTEMPTS} attempts "
                            "to commit", path=io.display(bdir))


def commit_object(commit: bytes, parent: bytes, retries: int, author: str, message: str,
                  objects: list[dict[str, Any]], version: int = 0, *,
                  vectors: bool = False) -> bytes:
    """The commit's actions: ``commits.Commit``, a ``commits.Add`` per object, and with
    ``vectors`` a ``commits.AddVector`` per object (its ``.csup`` copy, as ``super db
    vector add`` commits one).  super main marshals ``meta``, ``min`` and ``max`` as
    ``any`` (values with their own types); Zed and super v0.3.0 as the values' types."""
    anyt = Z.any_type() if version == 5 else None
    vals: list[tuple[Type, Any]] = [(Z.commit_t(anyt or NULL), {
        "id": commit, "parent": parent, "retries": min(retries, 255), "author": author,
        "date": np.datetime64(time.time_ns(), "ns"), "message": message,
        "meta": Value(NULL, None) if anyt else None})]
    for o in objects:
        (mnt, mnv), (mxt, mxv) = _kv(o["min"]), _kv(o["max"])
        if anyt is not None:
            mnt, mnv, mxt, mxv = anyt, Value(mnt, mnv), anyt, Value(mxt, mxv)
        vals.append((Z.add_t(mnt, mxt), {"commit": commit, "object": {
            "id": o["id"], "min": mnv, "max": mxv, "count": o["count"], "size": o["size"]}}))
    if vectors:
        vals += [(Z.id_action_t("AddVector"), {"commit": commit, "id": o["id"]})
                 for o in objects]
    return Z.encode(vals, version)


async def _journal_snapshot(lake: LakeHandle, bdir: str, entries: dict[str, Z.Record], branch: str,
                            ts: Any, commit: bytes, at: int) -> None:
    """``snap.zng``: the journal ID, then every branch config at it (a hint: a failed
    write is harmless, readers replay the entries)."""
    vals: list[tuple[Type, Any]] = [(UINT64, at)]
    for name, r in sorted(entries.items()):
        c = commit if name == branch else r.values.get("commit")
        vals.append((Z.BRANCH_CONFIG, {"ts": r.values.get("ts"), "name": name, "commit": c}))
    with contextlib.suppress(CsupError):
        await lake.io.put(f"{bdir}/snap.zng", Z.encode(vals, lake.io.bsup_version))

