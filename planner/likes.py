"""SQL ``like`` patterns: their literal prefix and their regular expression.

Worked out once when a :class:`planner.filters.Like` is made (it carries both), so
evaluation over arrays reads them and never calls back into the planner.
"""

from __future__ import annotations

import functools
import re

__all__ = ["like_prefix", "like_regex"]


@functools.lru_cache(maxsize=256)
def like_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression of a ``like`` pattern (anchored by ``fullmatch``)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def like_prefix(pattern: str) -> tuple[str, str]:
    """``(prefix, rest)``: the literal text before the first wildcard, and the pattern
    from it on (``""``: no wildcard, the pattern is that one string)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i + 1])
            i += 2
            continue
        if c in "%_":
            return "".join(out), pattern[i:]
        out.append(c)
        i += 1
    return "".join(out), ""
