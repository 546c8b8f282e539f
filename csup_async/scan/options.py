"""The caps a read meets and how one read runs, made when the read starts.

Every option's name, default and check is in :mod:`csup_async.model.options` (the
typed object ``open`` parses its keywords into once); this module holds what a read
makes of them.  The caps' defaults are module values here, read when a read starts
(not when a reader is made), so a process can lower them for every reader at once
(``csup_async.scan.options.DEFAULT_MAX_ROWS = ...``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_MEM_LENGTH,
    DEFAULT_MAX_METADATA,
    DEFAULT_MAX_ROWS,
    DEFAULT_MAX_VALUES,
    READER_OPTIONS,
    ROW_COUNT_HABITS,
    SHARED_OPTIONS,
    VERB_ARGUMENTS,
    check_habits,
    check_int,
    check_timeout,
    renamed_options,
    split_options,
)

__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_MAX_MEM_LENGTH", "DEFAULT_MAX_METADATA",
           "DEFAULT_MAX_ROWS", "DEFAULT_MAX_VALUES", "READER_OPTIONS", "ROW_COUNT_HABITS",
           "SHARED_OPTIONS", "VERB_ARGUMENTS", "Limits", "ReadOptions", "check_habits",
           "renamed_options", "split_options"]


@dataclass(frozen=True, slots=True)
class Limits:
    """What one read may make the process fetch, decompress and allocate."""

    max_rows: int
    max_values: int
    max_mem_length: int

    @classmethod
    def of(cls, max_rows: int | None = None, max_values: int | None = None,
           max_mem_length: int | None = None) -> Limits:
        """Limits with the module defaults (as they are now) where None."""
        return cls(DEFAULT_MAX_ROWS if max_rows is None else int(max_rows),
                   DEFAULT_MAX_VALUES if max_values is None else int(max_values),
                   DEFAULT_MAX_MEM_LENGTH if max_mem_length is None else int(max_mem_length))


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """How one read runs: requests in flight, its caps and its deadline (seconds or None).

    ``verify_checksums`` (default True): every segment whose statistics carry a
    ``crc32`` is checked against its stored bytes before they are decompressed,
    and every segment with a ``count`` against the values it decodes to
    (:mod:`csup_async.scan.checks`); False skips the CRC only (it is the one
    check that costs CPU), for a caller who trusts the store's own integrity.
    """

    concurrency: int
    limits: Limits
    timeout: float | None = None
    verify_checksums: bool = True

    def __post_init__(self) -> None:
        # the same checks as open's (csup_async.model.options), for a read made by hand
        check_int("concurrency", self.concurrency, least=1, optional=False)
        check_timeout(self.timeout)
