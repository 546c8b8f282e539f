"""Rows already shredded into columns: the writer's bulk input.

:meth:`csup_async.writers.writer.Writer.write_batch` takes a :class:`Batch` and puts
its values into the same column streams, presence runs and segments the
per-value path (:meth:`Writer.write_body`) would, in the same order, so both
paths write the same bytes.  The vectorised inputs (Arrow tables, numpy
columns, plain Python rows: :mod:`csup_async.shred`) build batches; the writer
never needs to know where they came from.

A node mirrors its type's column:

- :class:`Prim` — a primitive or enum column: its tag-encoded values, nulls
  in band (a ``0`` tag).
- :class:`Rec` — a record: per field, which values have it (presence) and the
  field's node over those values only.
- :class:`Arr` — an array or set: the lengths and the elements.
- :class:`MapNode` — a map: the lengths, the keys and the values.
- :class:`UnionNode` — a union: the tags and, per member, its values.
- :class:`ErrNode` — an error: the wrapped values.

Where no presence column covers a null (rows, array elements, map entries,
union members, an error's value) values come in a :class:`Slot`: ``n`` values,
which are present (``valid``), and the node over the present ones (over all
``n`` for a primitive, whose nulls are in band).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.types import Type
from .tagenc import Encoded

__all__ = ["Batch", "Slot", "Node", "Prim", "Rec", "Arr", "MapNode", "UnionNode", "ErrNode",
           "Presence"]

#: A record field's presence over the record's values: True (all have it),
#: False (none has it) or a boolean mask.
Presence = bool | np.ndarray


@dataclass(frozen=True, slots=True)
class Prim:
    values: Encoded


@dataclass(frozen=True, slots=True)
class Slot:
    n: int
    valid: np.ndarray | None
    node: Node | None

    @property
    def present(self) -> int:
        return self.n if self.valid is None else int(np.count_nonzero(self.valid))


@dataclass(frozen=True, slots=True)
class Rec:
    fields: tuple[tuple[Presence, Node | None], ...]


@dataclass(frozen=True, slots=True)
class Arr:
    lengths: Encoded
    elems: Slot


@dataclass(frozen=True, slots=True)
class MapNode:
    lengths: Encoded
    keys: Slot
    values: Slot


@dataclass(frozen=True, slots=True)
class UnionNode:
    tags: Encoded
    members: tuple[Slot | None, ...]


@dataclass(frozen=True, slots=True)
class ErrNode:
    inner: Slot


Node = Prim | Rec | Arr | MapNode | UnionNode | ErrNode


@dataclass(slots=True)
class Batch:
    """Rows in file order: ``types`` in order of first appearance, ``row_types`` the
    index into ``types`` of each row, and per type the :class:`Slot` of its rows."""

    types: list[Type]
    row_types: np.ndarray
    slots: list[Slot]
    _nbytes: int | None = field(default=None)

    @property
    def rows(self) -> int:
        return int(self.row_types.size)

    @property
    def nbytes(self) -> int:
        """At most the bytes this batch adds to the writer's buffers (cuts only shrink
        them), so a batch this size under the skew threshold cannot cross it."""
        if self._nbytes is None:
            self._nbytes = 10 * self.rows + sum(_slot_bytes(s) for s in self.slots)
        return self._nbytes


def _runs_bytes(mask: Presence | None) -> int:
    if mask is None or isinstance(mask, bool):
        return 10
    if mask.size < 2:
        return 10 * (mask.size + 1)
    return 10 * (int(np.count_nonzero(mask[1:] != mask[:-1])) + 2)


def _slot_bytes(s: Slot | None) -> int:
    if s is None:
        return 0
    return _runs_bytes(s.valid) + _node_bytes(s.node)


def _node_bytes(node: Node | None) -> int:
    if node is None:
        return 0
    if isinstance(node, Prim):
        return node.values.nbytes
    if isinstance(node, Rec):
        return sum(_runs_bytes(p) + _node_bytes(c) for p, c in node.fields)
    if isinstance(node, Arr):
        return node.lengths.nbytes + _slot_bytes(node.elems)
    if isinstance(node, MapNode):
        return node.lengths.nbytes + _slot_bytes(node.keys) + _slot_bytes(node.values)
    if isinstance(node, UnionNode):
        return node.tags.nbytes + sum(_slot_bytes(m) for m in node.members)
    return _slot_bytes(node.inner)
