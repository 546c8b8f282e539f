"""The one error a lake raises for a lake that is not what its layout promises."""

from __future__ import annotations

from ..model.errors import CsupError

__all__ = ["LakeError", "LakeConflictError", "LakeNotFoundError"]


class LakeError(CsupError):
    """A lake object is missing, torn, of the wrong shape or inconsistent.

    ``path`` names the object (``.../branches/7.zng``, ``.../commits/<id>.zng``),
    so a user can look at exactly the file that is wrong.
    """


class LakeConflictError(LakeError):
    """A commit could not be made: the branch moved under every attempt, or an
    action conflicts with the state (an object added twice, deleted when absent)."""


class LakeNotFoundError(LakeError):
    """What was named or referenced is not in the lake: no ``lake.zng``, no such pool,
    branch or journal ID, a commit, data object or seek index that is absent (the
    CLI's exit code 3, as for any object not found)."""
