"""One SuperDB vector's metadata as plain data: :class:`Node` and its segments.

Apart from :mod:`.meta` (which parses headers and metadata sections into them) so the
per-type builders of :mod:`.fastnodes`, which :mod:`.meta` uses, can make them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...model.types import Type

__all__ = ["Node", "Seg"]


@dataclass(frozen=True, slots=True)
class Seg:
    """A byte range of an object's data section (offset relative to it).  ``size`` is
    what is stored: integer vectors keep their compressed size in ``MemLength``."""

    offset: int
    size: int
    mem: int
    lz4: bool


@dataclass(frozen=True, slots=True)
class Node:
    """One vector's metadata: ``kind`` is the marshalled type's name lower-cased."""

    kind: str
    count: int = 0
    segs: tuple[tuple[str, Seg], ...] = ()
    kids: tuple[int, ...] = ()
    type: Type | None = None  # primitives and constants: the values' type
    name: str = ""  # named
    fields: tuple[tuple[str, bool], ...] = ()  # record: (name, optional) per kid
    value: Any = None  # const
    min: Any = None
    max: Any = None

    def seg(self, role: str) -> Seg | None:
        for r, s in self.segs:
            if r == role:
                return s
        return None
