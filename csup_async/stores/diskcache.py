"""A metadata cache that outlives the process: the next CLI run or Spark executor starts warm.

``open(url, metadata_cache=DiskMetadataCache(directory))`` (or
``metadata_cache=Path(directory)``) keeps, besides the in-memory LRU, one file per
object and version under ``directory``: the tail bytes and any other bytes the
open read, from which the metadata is parsed again on a hit (parsing is CPU
only; what the cache saves is the requests).  Nothing is unpickled: an entry is
a JSON header and raw bytes, checked against the key and version it claims.

* Keys are a SHA-256 of the store's scope (its kind and options, credentials
  included, and what it resolved from the environment: ``Store.identity``) and the
  object's key (``Store.cache_key``): no credential or URL is written in clear.
  Only opens through a shared store (a URL and options, not ``store=``) are
  written: their scope means the same in every process.
* The files hold tail bytes, which may include data: the directory is made
  ``0700`` and the files ``0600``.
* Writes are atomic (a temporary file in the same directory, then
  ``os.replace``), so concurrent processes see an entry whole or not at all;
  a SHA-256 at the end covers every byte before it, so a damaged (or hostile, or
  foreign) file is a miss, and removed: the open reads the store again.
* The directory is bounded (``max_disk_bytes``): after a write, the least
  recently used entries (file modification time, touched on each hit) go.
* With ``immutable=True`` a hit makes no request; otherwise the open's tail
  read is conditional (``If-None-Match`` with the cached ETag) and a 304 ends
  it with no body.
* Whole small objects whose names never change content (a Zed lake's seek
  indexes, commits and journal entries) are kept too, by
  :meth:`DiskMetadataCache.get_object` / :meth:`~DiskMetadataCache.put_object`:
  raw bytes with their length and SHA-256, at most ``MAX_DISK_OBJECT`` each.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import tempfile
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from planner.calibration import Sample

from ..format.csup import find_trailer, parse_reassembly
from ..model.errors import CsupError
from . import ObjectInfo, TailRead
from .calibrate import Measurements, from_rows, to_rows
from .metacache import DEFAULT_CACHE_BYTES, CachedMetadata, MetadataCache
from .rangebuf import RangeBuffer
from .shared import STABLE_SCOPE

__all__ = ["CACHE_ENV", "DEFAULT_DISK_BYTES", "MAX_DISK_OBJECT", "DiskMetadataCache",
           "disk_cache", "env_cache"]

#: A directory here turns the on-disk cache on for every open that names no cache:
#: the CLI and Spark executors (``spark.executorEnv.CSUP_METADATA_CACHE``) included.
CACHE_ENV = "CSUP_METADATA_CACHE"

DEFAULT_DISK_BYTES = 256 << 20
_MAGIC = b"CSUPMC2\n"  # 2: a SHA-256 of all that comes before it ends the file
_CHECKSUM = 32
_HEADER = struct.Struct("<I")
_SUFFIX = ".csupmeta"
_CAL_SUFFIX = ".csupcal"  # one endpoint's measured requests (stores/calibrate.py)
_OBJ_SUFFIX = ".csupobj"  # one whole immutable object (a lake's seek index, commit, entry)
_OBJ_MAGIC = b"CSUPOB1\n"
#: The largest whole object :meth:`DiskMetadataCache.put_object` keeps (a seek index or
#: journal entry is a few KiB; a larger object is data, not metadata).
MAX_DISK_OBJECT = 1 << 20


def _stable(value: Any) -> str:
    """A text form of a cache scope that is the same in every process (sets sorted)."""
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(_stable(v) for v in value)) + "}"
    if isinstance(value, tuple):
        return "(" + ",".join(_stable(v) for v in value) + ")"
    return repr(value)


class DiskMetadataCache(MetadataCache):
    """A MetadataCache whose entries are also kept in ``directory`` for other processes."""

    def __init__(self, directory: str | os.PathLike[str], *,
                 max_bytes: int = DEFAULT_CACHE_BYTES,
                 max_disk_bytes: int = DEFAULT_DISK_BYTES) -> None:
        super().__init__(max_bytes)
        if not isinstance(max_disk_bytes, int) or max_disk_bytes < 0:
            raise CsupError(f"max_disk_bytes must be a non-negative int, not {max_disk_bytes!r}")
        self.directory = Path(directory)
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as e:
            raise CsupError(f"cannot use {str(directory)!r} as a metadata cache: "
                            f"{e.strerror or e}") from None
        self.max_disk_bytes = max_disk_bytes
        self.disk_hits = 0

    def __repr__(self) -> str:
        return f"DiskMetadataCache({str(self.directory)!r}, {super().__repr__()})"

    def _file(self, ident: Hashable) -> tuple[Path, str]:
        digest = hashlib.sha256(_stable(ident).encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / (digest + _SUFFIX), digest

    # ------------------------------------------------------------ lookups ---
    def get(self, ident: Hashable, version: str | None = None) -> CachedMetadata | None:
        hit = super().get(ident, version)
        if hit is not None or not _persistable(ident):
            return hit
        entry = self._read(ident)
        if entry is None or (version is not None and entry.version != version):
            return None
        self.disk_hits += 1
        MetadataCache.put(self, ident, entry)  # in memory from now on
        return entry

    def peek(self, ident: Hashable) -> CachedMetadata | None:
        hit = super().peek(ident)
        if hit is not None or not _persistable(ident):
            return hit
        entry = self._read(ident)
        if entry is not None:
            MetadataCache.put(self, ident, entry)
        return entry

    def put(self, ident: Hashable, entry: CachedMetadata) -> None:
        super().put(ident, entry)
        if entry.version is not None and _persistable(ident):
            self._write(ident, entry)

    def clear(self) -> None:
        super().clear()
        for suffix in (_SUFFIX, _CAL_SUFFIX, _OBJ_SUFFIX):
            for f in self.directory.glob("*" + suffix):
                with contextlib.suppress(OSError):
                    f.unlink()

    # ------------------------------------------------- immutable objects ---
    def _obj_file(self, ident: Hashable) -> tuple[Path, str]:
        digest = hashlib.sha256(("object " + _stable(ident)).encode("utf-8", "surrogatepass")
                                ).hexdigest()
        return self.directory / (digest + _OBJ_SUFFIX), digest

    def get_object(self, ident: Hashable) -> bytes | None:
        """The bytes an earlier :meth:`put_object` kept under ``ident`` (a store's scope
        and an object's key), or None; a damaged or foreign file is a miss, and removed."""
        if not _persistable(ident):
            return None
        path, digest = self._obj_file(ident)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        data = _decode_object(raw, digest)
        if data is None:
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        self.disk_hits += 1
        return data

    def put_object(self, ident: Hashable, data: bytes) -> None:
        """Keep a whole object whose name never changes content, for other processes
        (not when larger than MAX_DISK_OBJECT, or its store's scope is this process's)."""
        if len(data) > MAX_DISK_OBJECT or not _persistable(ident):
            return
        path, digest = self._obj_file(ident)
        header = json.dumps({"key": digest, "size": len(data),
                             "sha256": hashlib.sha256(data).hexdigest()}).encode()
        blob = b"".join([_OBJ_MAGIC, _HEADER.pack(len(header)), header, data])
        if len(blob) > self.max_disk_bytes:
            return
        try:
            _atomic_write(self.directory, path, blob)
        except OSError:
            return
        self._evict()

    # ----------------------------------------------------- measurements ---
    def _cal_file(self, endpoint: str) -> Path:
        digest = hashlib.sha256(("endpoint " + endpoint).encode()).hexdigest()
        return self.directory / (digest + _CAL_SUFFIX)

    def get_measurements(self, endpoint: str) -> list[Sample]:
        """The requests an earlier process measured at ``endpoint`` (none if unknown)."""
        try:
            head = json.loads(self._cal_file(endpoint).read_bytes())
        except (OSError, ValueError, RecursionError, MemoryError):
            return []
        if not isinstance(head, dict) or head.get("endpoint") != endpoint:
            return []
        try:
            return from_rows(head.get("samples"))
        except (ValueError, TypeError, KeyError, OverflowError, RecursionError):
            return []  # a damaged file costs the calibration, never the read

    def put_measurements(self, endpoint: str, m: Measurements) -> None:
        """Keep ``endpoint``'s measured requests for the next process (atomically; a
        failed write costs the next process its calibration, never this read)."""
        blob = json.dumps({"endpoint": endpoint, "samples": to_rows(m)}).encode()
        with contextlib.suppress(OSError):
            _atomic_write(self.directory, self._cal_file(endpoint), blob)

    # -------------------------------------------------------------- files ---
    def _read(self, ident: Hashable) -> CachedMetadata | None:
        path, digest = self._file(ident)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        try:
            entry = _decode(raw, digest)
        except (CsupError, ValueError, KeyError, TypeError, struct.error, OverflowError,
                RecursionError, MemoryError):  # whatever a damaged file makes of parsing
            entry = None
        if entry is None:
            with contextlib.suppress(OSError):
                path.unlink()  # damaged or not ours: a miss, and gone
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: evicted last
        return entry

    def _write(self, ident: Hashable, entry: CachedMetadata) -> None:
        path, digest = self._file(ident)
        blob = _encode(entry, digest)
        if len(blob) > self.max_disk_bytes:
            return
        try:
            _atomic_write(self.directory, path, blob)
        except OSError:
            return  # a full or read-only disk costs the cache, never the read
        self._evict()

    def _evict(self) -> None:
        files: list[tuple[float, int, Path]] = []
        total = 0
        for f in [*self.directory.glob("*" + _SUFFIX), *self.directory.glob("*" + _OBJ_SUFFIX)]:
            try:
                st = f.stat()
            except OSError:
                continue  # another process removed it
            files.append((st.st_mtime, st.st_size, f))
            total += st.st_size
        files.sort()
        for _, size, f in files:
            if total <= self.max_disk_bytes:
                break
            with contextlib.suppress(OSError):
                f.unlink()
            total -= size


def _atomic_write(directory: Path, path: Path, blob: bytes) -> None:
    """``path`` holds ``blob`` whole or not at all, whatever other processes do."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _persistable(ident: Hashable) -> bool:
    """Whether an entry may be shared with other processes: only when its scope is made
    of the store's kind and options (a shared store), which mean the same thing in every
    process; a store passed by hand has a scope numbered in this process only, so its
    entries stay in memory (another process's store of that number may hold other
    credentials)."""
    scope = ident[0] if isinstance(ident, tuple) and ident else None
    return isinstance(scope, tuple) and bool(scope) and scope[0] == STABLE_SCOPE


def _encode(entry: CachedMetadata, digest: str) -> bytes:
    tail = entry.tail
    parts = [(tail.offset, tail.data), *entry.extra]
    header = json.dumps({"key": digest, "version": entry.version, "size": tail.info.size,
                         "parts": [[off, len(data)] for off, data in parts]}).encode()
    blob = b"".join([_MAGIC, _HEADER.pack(len(header)), header,
                     *(bytes(data) for _, data in parts)])
    return blob + hashlib.sha256(blob).digest()


def _decode_object(raw: bytes, digest: str) -> bytes | None:
    """The bytes of an object file, if it is whole and is the one ``digest`` names."""
    if not raw.startswith(_OBJ_MAGIC) or len(raw) < len(_OBJ_MAGIC) + _HEADER.size:
        return None
    pos = len(_OBJ_MAGIC)
    (n,) = _HEADER.unpack_from(raw, pos)
    pos += _HEADER.size
    try:
        head = json.loads(raw[pos:pos + n])
    except (ValueError, RecursionError, MemoryError):  # a damaged or hostile header
        return None
    data = raw[pos + n:]
    if (not isinstance(head, dict) or head.get("key") != digest
            or head.get("size") != len(data)
            or head.get("sha256") != hashlib.sha256(data).hexdigest()):
        return None
    return data


def _decode(raw: bytes, digest: str) -> CachedMetadata | None:
    """The entry a file holds, or None when it is not whole and ours: every byte is
    under the SHA-256 at its end, so a flipped bit in the tail bytes (which would
    change the values read on every run) or the header is a miss, never a
    different answer."""
    if not raw.startswith(_MAGIC) or len(raw) < len(_MAGIC) + _HEADER.size + _CHECKSUM:
        return None
    raw, checksum = raw[:-_CHECKSUM], raw[-_CHECKSUM:]
    if hashlib.sha256(raw).digest() != checksum:
        return None
    pos = len(_MAGIC)
    (n,) = _HEADER.unpack_from(raw, pos)
    pos += _HEADER.size
    head = json.loads(raw[pos:pos + n])
    pos += n
    if not isinstance(head, dict) or head.get("key") != digest or not isinstance(
            head.get("version"), str):
        return None
    size = head.get("size")
    if type(size) is not int or size < 0 or not isinstance(head.get("parts"), list):
        return None
    parts: list[tuple[int, bytes]] = []
    for part in head["parts"]:
        if not (isinstance(part, list) and len(part) == 2
                and all(type(x) is int for x in part)):
            return None
        off, length = part
        if off < 0 or length < 0 or off + length > size or pos + length > len(raw):
            return None
        parts.append((off, raw[pos:pos + length]))
        pos += length
    if pos != len(raw) or not parts:
        return None
    (t_off, t_data), extra = parts[0], tuple(parts[1:])
    if t_off + len(t_data) != size:
        return None  # a tail ends at the end of the object
    trailer = find_trailer(t_data, size)
    buf = RangeBuffer()
    for off, data in parts:
        buf.add(off, data)
    start = trailer.data_size
    section = buf.get(start, trailer.reassembly_size)
    meta = parse_reassembly(section, trailer, size)
    tail = TailRead(t_data, ObjectInfo(size, head["version"]))
    return CachedMetadata(meta, tail, extra)


_by_dir: dict[str, DiskMetadataCache] = {}
_by_dir_lock = threading.Lock()


def disk_cache(directory: str | os.PathLike[str]) -> DiskMetadataCache:
    """The process's DiskMetadataCache for ``directory`` (one per directory, for
    ``metadata_cache=Path(directory)``)."""
    where = os.path.abspath(os.fspath(directory))
    with _by_dir_lock:
        cache = _by_dir.get(where)
        if cache is None:
            cache = _by_dir[where] = DiskMetadataCache(where)
        return cache


def env_cache() -> DiskMetadataCache | None:
    """The cache ``$CSUP_METADATA_CACHE`` names, if it names one."""
    where = os.environ.get(CACHE_ENV)
    return disk_cache(where) if where else None
