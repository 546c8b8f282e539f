"""Exact progress: bytes read against the bytes the plan will read, from the plan itself.

A scan's plan names every request before the first is sent, so the total is
known, not estimated; each chunk that lands adds its length.  Bodies that
break resume from the byte they reached and a hedged request delivers only the
copy that answered first, so no byte is counted twice: the events rise
monotonically and the last one is exactly the planned total.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .errors import ArgumentError

__all__ = ["Progress", "ProgressTracker", "current_tracker", "tracking"]


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress event: bytes (and, for a dataset, files) done out of planned."""

    bytes_done: int
    bytes_planned: int
    files_done: int = 0
    files_planned: int = 1

    @property
    def fraction(self) -> float:
        return self.bytes_done / self.bytes_planned if self.bytes_planned else 1.0


class ProgressTracker:
    """Counts one scan's bytes and calls ``callback`` with a Progress after each step."""

    def __init__(self, callback: Callable[[Progress], object], bytes_planned: int,
                 files_planned: int = 1) -> None:
        if not callable(callback):
            raise ArgumentError(f"on_progress must be callable, not {type(callback).__name__}")
        self.callback = callback
        self.bytes_planned = bytes_planned
        self.files_planned = files_planned
        self.bytes_done = 0
        self.files_done = 0

    def _emit(self) -> None:
        self.callback(Progress(self.bytes_done, self.bytes_planned, self.files_done,
                               self.files_planned))

    def start(self) -> None:
        self._emit()

    def add(self, n: int) -> None:
        if n > 0:
            self.bytes_done += n
            self._emit()

    def file_done(self) -> None:
        self.files_done += 1
        self._emit()


_CURRENT: contextvars.ContextVar[ProgressTracker | None] = contextvars.ContextVar(
    "csup_progress", default=None)


@contextlib.contextmanager
def tracking(tracker: ProgressTracker | None) -> Iterator[None]:
    """Report the reads of this task (and the tasks it starts) to ``tracker``."""
    token = _CURRENT.set(tracker)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_tracker() -> ProgressTracker | None:
    """The tracker of the scan being set up in this task (read once, when it starts)."""
    return _CURRENT.get()
