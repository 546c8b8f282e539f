"""Which filter paths the rows a test wrote hold (a filter naming a path no row holds is
refused with ColumnNotFoundError), decided from the Python rows themselves."""

from __future__ import annotations

from typing import Any

from planner.filters import Expr, columns_of


def row_has(row: Any, path: tuple[str, ...]) -> bool:
    """Whether ``row`` (a dict of dicts) has a field at ``path``, null or not."""
    for name in path:
        if not isinstance(row, dict) or name not in row:
            return False
        row = row[name]
    return True


def named_by_no_row(rows: list[Any], expr: Expr) -> bool:
    """Whether the filter names a path that no row has."""
    return any(not any(row_has(r, p) for r in rows) for p in columns_of(expr))
