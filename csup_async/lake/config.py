"""A lake's and its pools' configuration records (``lake.zng``, ``pools.Config``,
``branches.Config``) as Python values: what opening a lake and creating pools share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import ksuid as K
from . import zedtypes as Z
from .errors import LakeError

__all__ = ["LAKE_MAGIC", "LAKE_VERSION", "SUPERDB_MAGIC", "SUPERDB_VERSIONS", "BranchConfig",
           "PoolConfig", "branch_config", "pool_config"]

LAKE_MAGIC = "ZED LAKE"
LAKE_VERSION = 3
#: ``superdb.bsup`` of a SuperDB database (``super db init``, v0.3.0 and main 492eab8).
SUPERDB_MAGIC = "SUPERDB"
SUPERDB_VERSIONS = (5,)


@dataclass(frozen=True)
class PoolConfig:
    name: str
    id: bytes
    order: str  # "asc" | "desc"
    keys: tuple[tuple[str, ...], ...]
    seek_stride: int
    threshold: int
    ts: Any = None

    @property
    def key(self) -> tuple[str, ...]:
        """The pool key (only the first key counts), e.g. ``("ts",)``."""
        return self.keys[0] if self.keys else ("ts",)

    @property
    def key_name(self) -> str:
        return ".".join(self.key)

    @property
    def id_str(self) -> str:
        return K.to_str(self.id)


@dataclass(frozen=True)
class BranchConfig:
    name: str
    commit: bytes
    ts: Any = None


def pool_config(r: Z.Record, path: str) -> PoolConfig:
    layout = r.sub("layout", path)
    order = layout.get("order", path, str)
    if order not in ("asc", "desc"):
        raise LakeError(f"pool {r.values.get('name')!r} has sort order {order!r}", path=path)
    keys = layout.get("keys", path)
    if keys is None:
        keys = []
    if not isinstance(keys, list) or not all(isinstance(k, list) for k in keys):
        raise LakeError("pool layout keys are not a list of field paths", path=path)
    return PoolConfig(r.get("name", path, str), r.ksuid("id", path), order,
                      tuple(tuple(k) for k in keys),
                      # (super main's pools have no seek stride: their objects no seek index)
                      int(r.get("seek_stride", path, int)) if "seek_stride" in r.values else 0,
                      int(r.get("threshold", path, int)), r.values.get("ts"))


def branch_config(r: Z.Record, path: str) -> BranchConfig:
    return BranchConfig(r.get("name", path, str), r.ksuid("commit", path), r.values.get("ts"))
