"""An independent, deliberately small writer of Zed v1.7.0 lakes, for the tests.

It shares no code with ``csup_async`` (not the BSUP codec, not the loader):
its own ZNG encoder (uncompressed frames), KSUIDs, seek-index writer and
journal logic, written from the layout the project's LAKE-NOTES.md describe
and brimdata/zed v1.7.0's ``lake/`` code.  So the reader is tested against a
second implementation of the format, not only against itself.

Types are written as small tuples: a primitive's name (``"int64"``),
``("record", [(name, type), ...])``, ``("array", type)``, ``("named", name, type)``.
Only non-negative integers and times are used (their bytes are the same in
zig-zag and sign-magnitude, see the issue).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PRIM = ("uint8 uint16 uint32 uint64 uint128 uint256 int8 int16 int32 int64 int128 int256 "
        "duration time float16 float32 float64 float128 float256 decimal32 decimal64 "
        "decimal128 decimal256 bool bytes string ip net type null").split()
PRIM_ID = {n: i for i, n in enumerate(PRIM)}

KSUID = ("named", "ksuid.KSUID", "bytes")
NIL = bytes(20)
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


# ------------------------------------------------------------------ ZNG ---
def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tagged(body: bytes | None) -> bytes:
    return b"\x00" if body is None else uvarint(len(body) + 1) + body


def body_of(t: Any, v: Any) -> bytes | None:
    if v is None:
        return None
    if isinstance(t, tuple):
        kind = t[0]
        if kind == "named":
            return body_of(t[2], v)
        if kind == "record":
            return b"".join(tagged(body_of(ft, v[fn])) for fn, ft in t[1])
        if kind == "array":
            return b"".join(tagged(body_of(t[1], x)) for x in v)
        raise ValueError(t)
    if t.startswith("uint"):
        return v.to_bytes((v.bit_length() + 7) // 8, "little")
    if t.startswith("int") or t in ("time", "duration"):
        assert v >= 0, "the builder writes non-negative integers only"
        u = v << 1
        return u.to_bytes((u.bit_length() + 7) // 8, "little")
    if t == "string":
        return v.encode()
    if t == "bytes":
        return bytes(v)
    if t == "bool":
        return b"\x01" if v else b"\x00"
    if t == "float64":
        import struct

        return struct.pack("<d", v)
    raise ValueError(t)


class Stream:
    """One ZNG stream: a types frame before each value of a new type, then values."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.ids: dict[Any, int] = {}
        self.values = bytearray()

    def _frame(self, kind: int, payload: bytes) -> None:
        n = len(payload)
        self.out += bytes([(kind << 4) | (n & 0x0F)]) + uvarint(n >> 4) + payload

    def _typeid(self, t: Any, defs: bytearray) -> int:
        if isinstance(t, str):
            return PRIM_ID[t]
        if t in self.ids:
            return self.ids[t]
        if t[0] == "record":
            kids = [(fn, self._typeid(ft, defs)) for fn, ft in t[1]]
            d = b"\x00" + uvarint(len(kids)) + b"".join(
                uvarint(len(fn.encode())) + fn.encode() + uvarint(i) for fn, i in kids)
        elif t[0] == "array":
            d = b"\x01" + uvarint(self._typeid(t[1], defs))
        elif t[0] == "named":
            inner = self._typeid(t[2], defs)
            d = b"\x07" + uvarint(len(t[1].encode())) + t[1].encode() + uvarint(inner)
        else:
            raise ValueError(t)
        defs += d
        tid = 30 + len(self.ids)
        self.ids[t] = tid
        return tid

    def write(self, t: Any, v: Any) -> int:
        """Append a value; returns the length of its body (what zed's seek trigger sums)."""
        defs = bytearray()
        tid = self._typeid(t, defs)
        if defs:
            if self.values:
                self._frame(1, bytes(self.values))
                self.values = bytearray()
            self._frame(0, bytes(defs))
        b = body_of(t, v)
        self.values += uvarint(tid) + tagged(b)
        return 0 if b is None else len(b)

    def end(self) -> bytes:
        if self.values:
            self._frame(1, bytes(self.values))
            self.values = bytearray()
        if self.out:
            self.out.append(0xFF)
        data = bytes(self.out)
        self.out = bytearray()
        self.ids = {}
        return data


def zng(*values: tuple[Any, Any]) -> bytes:
    s = Stream()
    for t, v in values:
        s.write(t, v)
    return s.end()


# ---------------------------------------------------------------- types ---
def rec(*fields: tuple[str, Any]) -> tuple:
    return ("record", tuple(fields))


LAYOUT = ("named", "order.Layout", rec(
    ("order", ("named", "order.Which", "string")),
    ("keys", ("named", "field.List", ("array", ("named", "field.Path", ("array", "string")))))))
POOL = ("named", "pools.Config", rec(("ts", "time"), ("name", "string"), ("id", KSUID),
                                     ("layout", LAYOUT), ("seek_stride", "int64"),
                                     ("threshold", "int64")))
BRANCH = ("named", "branches.Config", rec(("ts", "time"), ("name", "string"),
                                          ("commit", KSUID)))
COMMIT = ("named", "commits.Commit", rec(("id", KSUID), ("parent", KSUID), ("retries", "uint8"),
                                         ("author", "string"), ("date", "time"),
                                         ("message", "string"), ("meta", "null")))


def obj_t(k: Any) -> tuple:
    return ("named", "data.Object", rec(("id", KSUID), ("min", k), ("max", k),
                                        ("count", "uint64"), ("size", "int64")))


def add_t(k: Any) -> tuple:
    return ("named", "commits.Add", rec(("commit", KSUID), ("object", obj_t(k))))


def idact_t(kind: str) -> tuple:
    return ("named", f"commits.{kind}", rec(("commit", KSUID), ("id", KSUID)))


def seek_t(k: Any) -> tuple:
    return rec(("min", k), ("max", k), ("val_off", "uint64"), ("val_cnt", "uint64"),
               ("offset", "uint64"), ("length", "uint64"))


def ksuid_str(k: bytes) -> str:
    n = int.from_bytes(k, "big")
    s = ""
    while n:
        n, r = divmod(n, 62)
        s = B62[r] + s
    return s.rjust(27, "0")


_counter = [0]


def new_ksuid() -> bytes:
    """Unique and time-ordered within a test run (a counter in the random part)."""
    _counter[0] += 1
    secs = int(time.time()) - 1_400_000_000
    return secs.to_bytes(4, "big") + _counter[0].to_bytes(8, "big") + os.urandom(8)


# ----------------------------------------------------------------- lake ---
@dataclass
class Obj:
    id: bytes
    min: Any
    max: Any
    count: int
    size: int
    seek: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return ksuid_str(self.id)


@dataclass
class PoolInfo:
    name: str
    id: bytes
    key: str
    order: str
    key_type: str
    stride: int

    @property
    def dir(self) -> str:
        return ksuid_str(self.id)


class LakeBuilder:
    """Writes a lake under ``root`` the way zed v1.7.0 lays it out."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "lake.zng").write_bytes(zng((
            ("named", "lake.LakeMagic", rec(("magic", "string"), ("version", "int64"))),
            {"magic": "ZED LAKE", "version": 3})))
        self._journal_create("pools")
        self.branches: dict[tuple[str, str], bytes] = {}  # (pool dir, branch) -> commit
        self.live: dict[bytes, dict[bytes, Obj]] = {}  # commit -> objects

    def put(self, rel: str, data: bytes) -> None:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)

    # journals
    def _journal_create(self, d: str) -> None:
        self.put(f"{d}/HEAD", b"0")
        self.put(f"{d}/TAIL", b"1 0")

    def head(self, d: str) -> int:
        return int((self.root / d / "HEAD").read_bytes())

    def _journal_append(self, d: str, data: bytes, *, write_head: bool = True) -> int:
        n = self.head(d) + 1
        while (self.root / d / f"{n}.zng").exists():
            n += 1
        self.put(f"{d}/{n}.zng", data)
        if write_head:
            self.put(f"{d}/HEAD", str(n).encode())
        return n

    def journal_snapshot(self, d: str, entry_t: Any, entries: list[dict[str, Any]],
                         at: int) -> None:
        self.put(f"{d}/snap.zng", zng(("uint64", at), *((entry_t, e) for e in entries)))

    # pools
    def create_pool(self, name: str, key: str = "ts", order: str = "asc",
                    key_type: str = "int64", stride: int = 65536) -> PoolInfo:
        p = PoolInfo(name, new_ksuid(), key, order, key_type, stride)
        cfg = self.pool_config(p)
        self._journal_append("pools", zng((("named", "journal.Add", rec(("entry", POOL))),
                                           {"entry": cfg})))
        self._journal_create(f"{p.dir}/branches")
        self.set_branch(p, "main", NIL, new=True)
        return p

    def rename_pool(self, p: PoolInfo, new: str) -> int:
        """One pools-journal entry: Delete(old name), Add(config under the new name)."""
        old = p.name
        p.name = new
        return self._journal_append("pools", zng(
            (("named", "journal.Delete", rec(("entry_key", "string"))), {"entry_key": old}),
            (("named", "journal.Add", rec(("entry", POOL))), {"entry": self.pool_config(p)})))

    @staticmethod
    def pool_config(p: PoolInfo) -> dict[str, Any]:
        return {"ts": 1_700_000_000_000_000_000, "name": p.name, "id": p.id,
                "layout": {"order": p.order, "keys": [[p.key]]},
                "seek_stride": p.stride, "threshold": 500 * 1024 * 1024}

    def set_branch(self, p: PoolInfo, branch: str, commit: bytes, *, new: bool = False,
                   write_head: bool = True) -> int:
        kind = "Add" if new else "Update"
        entry = {"ts": 1_700_000_000_000_000_000, "name": branch, "commit": commit}
        self.branches[(p.dir, branch)] = commit
        return self._journal_append(
            f"{p.dir}/branches",
            zng((("named", f"journal.{kind}", rec(("entry", BRANCH))), {"entry": entry})),
            write_head=write_head)

    def delete_branch(self, p: PoolInfo, branch: str) -> int:
        del self.branches[(p.dir, branch)]
        return self._journal_append(f"{p.dir}/branches", zng(
            (("named", "journal.Delete", rec(("entry_key", "string"))),
             {"entry_key": branch})))

    # data objects
    def write_object(self, p: PoolInfo, rows: list[dict[str, Any]], row_t: Any) -> Obj:
        """Rows sorted by the pool key (as zed's writer receives them), with its seek index."""
        rows = sorted(rows, key=lambda r: r[p.key], reverse=p.order == "desc")
        data = bytearray()
        s = Stream()
        seek: list[dict[str, Any]] = []
        trigger = 0
        seek_min = None
        last_off, last_cnt = 0, 0
        for i, r in enumerate(rows):
            s.write(row_t, r)
            k = r[p.key]
            trigger += len(body_of(p.key_type, k) or b"")
            if seek_min is None:
                seek_min = k
            if trigger >= p.stride:
                data += s.end()
                seek.append(self._entry(p, seek_min, k, last_cnt, i + 1, last_off, len(data)))
                last_off, last_cnt = len(data), i + 1
                trigger, seek_min = 0, None
        data += s.end()
        if seek_min is not None:
            seek.append(self._entry(p, seek_min, rows[-1][p.key], last_cnt, len(rows),
                                    last_off, len(data)))
        keys = [r[p.key] for r in rows]
        o = Obj(new_ksuid(), min(keys), max(keys), len(rows), len(data), seek)
        self.put(f"{p.dir}/data/{o.name}.zng", bytes(data))
        self.put(f"{p.dir}/data/{o.name}-seek.zng",
                 zng(*((seek_t(p.key_type), e) for e in seek)))
        return o

    @staticmethod
    def _entry(p: PoolInfo, first: Any, last: Any, val_off: int, count: int, off: int,
               end: int) -> dict[str, Any]:
        mn, mx = (last, first) if p.order == "desc" else (first, last)
        return {"min": mn, "max": mx, "val_off": val_off, "val_cnt": count - val_off,
                "offset": off, "length": end - off}

    # commits
    def commit(self, p: PoolInfo, branch: str, adds: list[Obj] = (), deletes: list[bytes] = (),
               vectors: list[bytes] = (), message: str = "", *,
               write_head: bool = True, parent: bytes | None = None) -> bytes:
        parent = self.branches[(p.dir, branch)] if parent is None else parent
        c = new_ksuid()
        vals: list[tuple[Any, Any]] = [(COMMIT, {
            "id": c, "parent": parent, "retries": 0, "author": "builder@test",
            "date": 1_700_000_000_000_000_000, "message": message, "meta": None})]
        for d in deletes:
            vals.append((idact_t("Delete"), {"commit": c, "id": d}))
        for o in adds:
            vals.append((add_t(p.key_type), {"commit": c, "object": self._obj(o)}))
        for v in vectors:
            vals.append((idact_t("AddVector"), {"commit": c, "id": v}))
        self.put(f"{p.dir}/commits/{ksuid_str(c)}.zng", zng(*vals))
        live = dict(self.live.get(parent, {}))
        for d in deletes:
            del live[d]
        for o in adds:
            live[o.id] = o
        self.live[c] = live
        self.set_branch(p, branch, c, write_head=write_head)
        return c

    @staticmethod
    def _obj(o: Obj) -> dict[str, Any]:
        return {"id": o.id, "min": o.min, "max": o.max, "count": o.count, "size": o.size}

    def load(self, p: PoolInfo, branch: str, rows: list[dict[str, Any]], row_t: Any,
             **kw: Any) -> tuple[bytes, Obj]:
        o = self.write_object(p, rows, row_t)
        return self.commit(p, branch, adds=[o], **kw), o

    def commit_snapshot(self, p: PoolInfo, c: bytes) -> None:
        """``<c>.snap.zng``: the state at c as Adds with a nil commit (0 bytes if empty)."""
        objs = list(self.live[c].values())
        data = zng(*((add_t(p.key_type), {"commit": NIL, "object": self._obj(o)})
                     for o in objs)) if objs else b""
        self.put(f"{p.dir}/commits/{ksuid_str(c)}.snap.zng", data)

    def create_branch(self, p: PoolInfo, name: str, from_branch: str = "main") -> int:
        return self.set_branch(p, name, self.branches[(p.dir, from_branch)], new=True)

    # mirroring
    def files(self) -> dict[str, bytes]:
        return {str(f.relative_to(self.root)): f.read_bytes()
                for f in sorted(self.root.rglob("*")) if f.is_file()}

    def upload(self, put: Any, prefix: str) -> None:
        """Copy the lake to a store: ``put(key, data)`` for each file under ``prefix``."""
        for rel, data in self.files().items():
            put(f"{prefix}/{rel}", data)
