"""The planner's refusals, as :class:`csup_async.model.errors.CsupError` subclasses.

Both are also ``ValueError`` so code that validates arguments generically still
catches them; being ``CsupError`` lets a service catch everything csup-async
refuses with one ``except``.  (Candidates to move into ``csup_async.model.errors``.)
"""

from __future__ import annotations

from csup_async.model.errors import CsupError


class ProfileError(CsupError, ValueError):
    """An unknown profile name, or a profile parameter outside its meaningful range."""


class InvalidPathError(CsupError, ValueError):
    """A projected column path that is not well formed (e.g. ``a..b`` or an open backquote)."""


class InvalidRangeError(CsupError, ValueError):
    """A byte range with a negative offset or length, or an ``available`` range that is not one."""
