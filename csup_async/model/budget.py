"""Budgets: refuse a scan whose plan needs more requests or bytes than the caller allows.

The plan names every request and byte before the first one is sent, so a
service can put a ceiling on what one call may cost and have it enforced
before anything moves (a limit checked while reading would stop a scan
halfway, with the bill already run up).
"""

from __future__ import annotations

from typing import Any

from .errors import ArgumentError, BudgetError

__all__ = ["check_budget", "check_limits"]


def check_limits(max_requests: Any, max_bytes: Any) -> None:
    """ArgumentError for a limit that is not None or an int >= 0."""
    for name, v in (("max_requests", max_requests), ("max_bytes", max_bytes)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise ArgumentError(f"{name} must be None or an integer >= 0, not {v!r}")


def check_budget(requests: int, nbytes: int, max_requests: int | None,
                 max_bytes: int | None, path: str | None,
                 when: str = "before any data request", detail: str = "") -> None:
    """BudgetError naming the figures if the plan's requests or bytes exceed a limit;
    ``when`` says how far the call got (``"before any data request"``, or before
    which wave), ``detail`` what was planned before."""
    over = []
    if max_requests is not None and requests > max_requests:
        over.append(f"{requests:,} requests (max_requests={max_requests:,})")
    if max_bytes is not None and nbytes > max_bytes:
        over.append(f"{nbytes:,} bytes (max_bytes={max_bytes:,})")
    if over:
        raise BudgetError(f"the scan was refused {when}: its plan needs "
                          + " and ".join(over) + (f" ({detail})" if detail else ""), path=path)
