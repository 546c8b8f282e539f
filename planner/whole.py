"""The plan of an object read whole at open (BSUP/ZNG): pure.

A BSUP stream has no column index, so ``open()`` reads all of it; a scan of any
projection then decodes from the bytes held and sends no request.  This plan says so
(``explain()``, the CLI's ``plan`` and ``scan --explain``) in the shape the other plans
have: no segments, no requests, the projection and the paths no value has.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WholeObjectPlan"]


@dataclass(frozen=True, slots=True)
class WholeObjectPlan:
    """A scan of an object whose bytes the open already holds (all of them)."""

    paths: tuple[str, ...]
    missing_paths: tuple[str, ...]
    object_size: int
    rows: int
    kind: str  # what the object is, e.g. "BSUP version 5"

    segments: tuple[()] = ()
    requests: tuple[()] = ()
    request_count: int = 0
    bytes_to_read: int = 0

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns read, as a ScanProgram of our layout names them."""
        return self.paths

    @property
    def bytes_needed(self) -> int:
        """Every byte of the object: a value's columns are not apart in a stream."""
        return self.object_size

    def explain(self) -> str:
        cols = ", ".join(p or '""' for p in self.paths) or "(none)"
        lines = [
            f"{self.kind}, {self.rows:,} value{'' if self.rows == 1 else 's'} in "
            f"{self.object_size:,} bytes: no column index, read whole at open",
            f"columns: {cols}",
            "data: 0 requests (decoded from the bytes the open read; every projection "
            "decodes the values it needs from them)",
        ]
        if self.missing_paths:
            lines.append("absent (null): " + ", ".join(self.missing_paths))
        return "\n".join(lines)
