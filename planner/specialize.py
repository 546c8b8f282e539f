"""A filter specialised for one file: paths whose value is the same on every row replaced.

A dataset's filter may read columns that are constant within a file: a Hive
partition column (one value per file), or a path the file has in no super type
(null on every row).  Replacing them by their value leaves a filter over the
file's own columns, which the file's scan prunes zones by and evaluates, or a
constant: the whole file matches (no filter left) or none of it does (the file is
not read).  No row is evaluated twice and the rules of a row's outcome stay
those of :func:`planner.filters.outcome`.

Why this is exact under three-valued logic: ``Not`` is first pushed down to the
leaves (De Morgan's laws hold in Kleene's logic), so a constant leaf's truth meets
only ``And`` and ``Or``.  Those are monotone, and a result that is true with an
unknown input is true whichever value the input takes; so for *which rows are
kept* an unknown constant may be taken as false.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .filters import And, Expr, IsNull, Not, Or, outcome

__all__ = ["specialize"]


def _row(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A row holding ``value`` at ``path`` (what :func:`outcome` looks a path up in)."""
    row: Any = value
    for name in reversed(path):
        row = {name: row}
    return row


def _leaf(e: Expr, negated: bool, constants: Mapping[tuple[str, ...], Any]) -> Expr | bool:
    path = e.path  # type: ignore[union-attr]
    if path not in constants:
        return Not(e) if negated else e
    got = outcome(Not(e) if negated else e, _row(path, constants[path]))
    return got is True  # unknown keeps no row (see the module docstring)


def _nnf(e: Expr, negated: bool, constants: Mapping[tuple[str, ...], Any]) -> Expr | bool:
    if isinstance(e, Not):
        return _nnf(e.part, not negated, constants)
    if isinstance(e, (And, Or)):
        conj = isinstance(e, And) != negated  # De Morgan: not (a and b) = not a or not b
        parts: list[Expr] = []
        for p in e.parts:
            got = _nnf(p, negated, constants)
            if got is (not conj):  # false in a conjunction, true in a disjunction
                return not conj
            if got is not conj:  # neither: a filter to keep
                parts.append(got)  # type: ignore[arg-type]
        if not parts:
            return conj
        if len(parts) == 1:
            return parts[0]
        return And(tuple(parts)) if conj else Or(tuple(parts))
    if isinstance(e, IsNull) and negated:
        return _leaf(IsNull(e.path, not e.negated), False, constants)
    return _leaf(e, negated, constants)


def specialize(expr: Expr, constants: Mapping[tuple[str, ...], Any]) -> Expr | bool:
    """``expr`` with the paths of ``constants`` replaced by their values (None: null).

    Returns True when every row is kept whatever the other columns hold, False when
    none is, else a filter over the other paths that keeps exactly the rows ``expr``
    keeps.  Without constants the filter comes back unchanged.
    """
    if not constants:
        return expr
    return _nnf(expr, False, constants)
