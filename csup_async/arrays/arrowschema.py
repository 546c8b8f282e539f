"""The Arrow schema of a scan, from metadata alone (``Schema.__arrow_c_schema__``).

A consumer asks for a schema before any data (polars plans a query on it, DuckDB
binds SQL to it), and a file's metadata holds every super type, so the schema
needs no read: each column is made empty, per super type, from the type at its
path, and combined and folded as a scan combines and folds the same parts; the
Arrow export of those empty arrays is the schema a scan's batches have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import planner as P
from planner.projection import path_type

from .. import arrays as A
from ..model.errors import ColumnNotFoundError
from .unify import unify

__all__ = ["ArrowSchema", "arrow_schema", "empty_column", "empty_columns"]


class ArrowSchema:
    """An Arrow schema (``__arrow_c_schema__``), with its column names."""

    def __init__(self, columns: dict[str, Any]) -> None:
        from .capsule import batch_schema

        self._schema = batch_schema(columns)
        self.names = list(columns)
        #: each column's type, by name, as this library names it (``int64``, ``string``,
        #: ``{a:int64}``...); ``pa.schema(s)`` gives the Arrow types
        self.types = {n: str(a.type) for n, a in columns.items()}

    @property
    def c_schema(self) -> Any:
        """The nanoarrow ``CSchema``."""
        return self._schema

    def __arrow_c_schema__(self) -> Any:
        return self._schema.__arrow_c_schema__()

    def __repr__(self) -> str:
        return f"<ArrowSchema {', '.join(f'{n}: {t}' for n, t in self.types.items())}>"

    def __len__(self) -> int:
        return len(self.names)


def empty_column(super_types: Sequence[Any], path: tuple[str, ...]) -> Any:
    """The zero-row array of the type a scan's column at ``path`` has (before
    unification), per super type as a scan combines them; None when no super type has
    the path."""
    parts = []
    for t in super_types:
        at = path_type(t, path) if path else t
        parts.append(None if at is None else A.null_array(at, 0))
    if all(p is None for p in parts):
        return None
    return A.combine(parts, np.zeros(0, np.int64))


def empty_columns(meta: Any, columns: Sequence[str] | str | None = None) -> dict[str, Any]:
    """Zero-row arrays of the types ``scan(columns)`` gives (every top-level column when
    None); ColumnNotFoundError for a path no super type has."""
    parsed = P.parse_columns(columns)
    paths = ([(s, p) for s, p in parsed] if parsed is not None
             else [(s, P.parse_path(s)) for s in P.top_level_paths(meta.super_types)])
    out: dict[str, Any] = {}
    for spelling, path in paths:
        col = empty_column(meta.super_types, path)
        if col is None:
            raise ColumnNotFoundError(f"no super type has a column {spelling!r}")
        out[spelling] = unify(A.fold_nulls(col), spelling, [])
    return out


def arrow_schema(meta: Any, columns: Sequence[str] | str | None = None) -> ArrowSchema:
    """The Arrow schema of ``scan(columns)`` of the file ``meta`` describes."""
    return ArrowSchema(empty_columns(meta, columns))
