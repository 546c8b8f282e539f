"""Exit codes: one per kind of error, so scripts can tell a typo from a missing object."""

from __future__ import annotations

from ..model.errors import (
    BudgetError,
    ColumnNotFoundError,
    CsupError,
    EncodeError,
    FormatError,
    NotFoundError,
    StoreError,
    UnsupportedTypeError,
)

EXIT_OTHER, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_DATA, EXIT_STORE, EXIT_BUDGET = 1, 2, 3, 4, 5, 6


class UsageError(CsupError):
    """A command line that makes no sense (exit code 2)."""


def exit_code(e: CsupError) -> int:
    """The documented code for ``e``; a lake follows the same kinds: something named or
    referenced that is absent is 3, a lake object that is not what its layout
    promises is 4 (invalid data), a commit that could not be made is 1."""
    from planner import FilterError, InvalidPathError

    from ..lake.errors import LakeConflictError, LakeError, LakeNotFoundError

    if isinstance(e, (UsageError, InvalidPathError, FilterError)):
        return EXIT_USAGE
    if isinstance(e, BudgetError):  # --max-requests/--max-bytes: nothing over it was read
        return EXIT_BUDGET
    if isinstance(e, (NotFoundError, ColumnNotFoundError, LakeNotFoundError)):
        return EXIT_NOT_FOUND
    if isinstance(e, LakeConflictError):
        return EXIT_OTHER
    if isinstance(e, LakeError):
        return EXIT_DATA
    if isinstance(e, (FormatError, UnsupportedTypeError, EncodeError)):
        return EXIT_DATA
    if isinstance(e, StoreError):
        return EXIT_STORE
    return EXIT_OTHER
