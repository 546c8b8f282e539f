"""One exception hierarchy for everything the library refuses.

Every error a user can get from csup-async is a :class:`CsupError`, so a
service can catch one type.  Errors carry the object they concern (``path``)
and say what was wrong; they never include credentials or signed URLs (see
:func:`csup_async.stores.redact_url`).
"""

from __future__ import annotations

import os


class CsupError(Exception):
    """Root of every error csup-async raises on purpose."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        message, path = _redacted(message, path)
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)

    def with_path(self, path: str | None) -> CsupError:
        """Return this error naming ``path`` (errors raised deep inside know no path)."""
        if path is None or self.path is not None:
            return self
        path = _redacted("", path)[1]
        self.path = path
        self.args = (f"{path}: {self.message}",)
        return self


def _redacted(message: str, path: str | None) -> tuple[str, str | None]:
    """The last guard of the one redaction: whatever a raiser passed, no URL in an error
    keeps its query string or ``user:password@``."""
    from .redact import redact_text, redact_url

    return redact_text(message), (None if path is None else redact_url(path))


class FormatError(CsupError):
    """The bytes are not a valid CSUP or BSUP encoding (corrupt, wrong magic, ...)."""


class TruncatedError(FormatError):
    """The data ends before a value, frame, segment or section does."""


class LimitError(FormatError):
    """The file asks for more than a configured cap allows (size, depth, count)."""


class UnsupportedTypeError(CsupError):
    """A type with no faithful Python form (decimals, float128/256) or not yet handled."""


class EncodeError(CsupError):
    """A value cannot be written exactly in the requested or inferred type."""


class ColumnNotFoundError(CsupError, KeyError):
    """A projected path exists in no super type of the file."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return Exception.__str__(self)


class RowSelectionError(CsupError, IndexError):
    """Rows asked for that the file does not have (an index past the end, a negative one),
    or a selection of the wrong kind (``rows=`` not a slice, indices not integers)."""


class ArgumentError(CsupError, ValueError):
    """An argument of the wrong kind or out of range (``batch_rows="3"``), named in the
    message; a ``ValueError`` too, for callers that catch that."""


class ConfigError(ArgumentError):
    """A store or reader option that is unknown (named, with the nearest accepted name),
    of the wrong type or out of range.  Never shows a credential's value."""


def source_text(source: object, what: str = "url") -> str:
    """A URL or path argument as text: ``pathlib.Path`` and other ``os.PathLike``
    objects are taken as paths (the habit of pyarrow, polars and pandas); anything but
    text or a path is an ArgumentError naming the argument."""
    if isinstance(source, str):
        return source
    if isinstance(source, os.PathLike):
        path = os.fspath(source)
        if isinstance(path, str):
            return path
    raise ArgumentError(f"{what} must be a string or a path, not {type(source).__name__}")


class BudgetError(CsupError):
    """A plan needs more requests or bytes than the caller allowed (``max_requests=``,
    ``max_bytes=``); raised before any of its data requests is sent."""


class StoreError(CsupError):
    """An object store failed or refused a request."""


class NotFoundError(StoreError):
    """The object (or bucket) does not exist."""


class AccessDeniedError(StoreError):
    """The store refused the credentials or the request (401/403)."""


class ObjectExistsError(StoreError):
    """A write asked to create an object only if absent (``if_absent=True``) found one."""


class ObjectChangedError(StoreError):
    """The object changed between the tail read and a later ranged read."""


class StoreTimeoutError(StoreError):
    """A request did not complete in time, after the allowed retries."""


class NotAwaitedError(CsupError, TypeError):
    """An async opener used as if it were what it opens: ``open(url)`` without ``await``
    or ``async with`` (the synchronous face is ``open_sync``/``read``)."""


def not_awaited(opener: str, name: str, sync: str) -> NotAwaitedError:
    """What using ``name`` on an un-awaited ``opener(...)`` says."""
    return NotAwaitedError(
        f"csup_async.{opener}() returns an awaitable, not the opened object: use "
        f"`async with csup_async.{opener}(...) as x` or `x = await csup_async.{opener}(...)` "
        f"before .{name}; without an event loop, use csup_async.{sync}(...) (or "
        f"csup_async.read(...))")
