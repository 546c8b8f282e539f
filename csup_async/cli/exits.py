"""Exit codes: one per kind of error, so scripts can tell a typo from a missing object."""

from __future__ import annotations

from ..errors import (
    ColumnNotFoundError,
    CsupError,
    EncodeError,
    FormatError,
    NotFoundError,
    StoreError,
    UnsupportedTypeError,
)

EXIT_OTHER, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_DATA, EXIT_STORE = 1, 2, 3, 4, 5


class UsageError(CsupError):
    """A command line that makes no sense (exit code 2)."""


def exit_code(e: CsupError) -> int:
    from planner import FilterError, InvalidPathError

    if isinstance(e, (UsageError, InvalidPathError, FilterError)):
        return EXIT_USAGE
    if isinstance(e, (NotFoundError, ColumnNotFoundError)):
        return EXIT_NOT_FOUND
    if isinstance(e, (FormatError, UnsupportedTypeError, EncodeError)):
        return EXIT_DATA
    if isinstance(e, StoreError):
        return EXIT_STORE
    return EXIT_OTHER
