"""Exact progress and budgets of one call, from its plans rather than from estimates.

A call (a Reader's verb, or a Dataset's over many files) gets a :class:`Meter`;
each file it reads gets a :class:`FileMeter`, which the read pipeline finds in a
context variable.  Before anything is sent the caller *expects* each file's
first wave, exactly as planned: the budget is checked against the sum (a
dataset's files together) and the progress total is that sum.  Every read then
*claims* the requests it is about to send (``pipeline.fetch.SegmentSource``,
before its first request): a claim within what was expected changes nothing; a
claim beyond it is a wave planned only now (a filtered scan's second wave, a row
map) and is checked against the budget before any of its requests is sent, and
only then grows the progress total.  So the events rise monotonically, the total
grows only when a wave is planned, and the last event is exactly the total.

Bytes are counted as they land: bodies that break resume from the byte they
reached and a hedged request delivers only the copy that answered first, so no
byte is counted twice.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .budget import check_budget

__all__ = ["FileMeter", "Meter", "Planned", "Progress", "current_tracker", "run_metered",
           "tracking"]


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress event: bytes (and files) done out of planned."""

    bytes_done: int
    bytes_planned: int
    files_done: int = 0
    files_planned: int = 1

    @property
    def fraction(self) -> float:
        return self.bytes_done / self.bytes_planned if self.bytes_planned else 1.0


@dataclass(frozen=True, slots=True)
class Planned:
    """A read planned and not started: the ``(requests, bytes)`` of its first wave, and
    ``run()`` to read it (a caller checks many files' figures before running any)."""

    figures: tuple[int, int]
    run: Callable[[], Awaitable[Any]]

    @staticmethod
    def done(value: Any) -> Planned:
        """A read that needs no request: ``run()`` gives ``value``."""
        async def run() -> Any:
            return value

        return Planned((0, 0), run)


class Meter:
    """One call's budget and progress over every file and wave it reads (the limits and
    the callback checked where the verb was entered: ``planner.request.Budget.parse``)."""

    def __init__(self, callback: Callable[[Progress], object] | None = None, *,
                 max_requests: int | None = None, max_bytes: int | None = None,
                 path: str | None = None) -> None:
        self.callback = callback
        self.max_requests, self.max_bytes = max_requests, max_bytes
        self.path = path  # what a BudgetError names (one file; None for a dataset)
        self.requests_planned = 0
        self.bytes_planned = 0
        self.files_planned = 0
        self.bytes_done = 0
        self.files_done = 0
        self.started = False

    def _emit(self) -> None:
        if self.callback is not None:
            self.callback(Progress(self.bytes_done, self.bytes_planned, self.files_done,
                                   self.files_planned))

    def file(self, path: str | None = None, *, counted: bool = True) -> FileMeter:
        """A meter for one more file of this call (counted in ``files_planned`` once
        something of it is expected or claimed); ``counted=False``: a call's reads
        outside any file's plan (a row count), checked and counted as bytes only."""
        fm = FileMeter(self, path)
        fm.counted = not counted  # (True: never counted as a file)
        return fm

    def expect(self, plans: list[tuple[FileMeter, int, int]]) -> None:
        """Each file's first wave ``(meter, requests, bytes)``, as planned: a BudgetError
        naming the sum if it is over the budget (before any of them is sent), else
        the progress total grows by it (and the first event is sent)."""
        req = sum(r for _, r, _ in plans)
        nbytes = sum(b for _, _, b in plans)
        if not self.requests_planned:
            when, detail = "before any data request", ""
        else:  # a row map read while planning, or a dataset's files planned earlier
            when = "before any request of the plan made now"
            detail = (f"{self.requests_planned:,} requests and {self.bytes_planned:,} bytes "
                      "were planned before it")
        self._check(self.requests_planned + req, self.bytes_planned + nbytes, when, detail)
        for fm, r, b in plans:
            if not fm.counted:
                fm.counted = True
                self.files_planned += 1
            fm.requests_allowed += r
            fm.bytes_allowed += b
        self.requests_planned += req
        self.bytes_planned += nbytes
        self.started = True
        self._emit()

    def _check(self, requests: int, nbytes: int, when: str, detail: str = "") -> None:
        path = self.path
        check_budget(requests, nbytes, self.max_requests, self.max_bytes, path, when, detail)

    def grow(self, fm: FileMeter, requests: int, nbytes: int) -> None:
        """A wave planned after the first (its requests not yet sent): checked, then
        counted in the totals."""
        if requests <= 0 and nbytes <= 0:
            return
        if not self.requests_planned:
            when, detail = "before any data request", ""
        else:
            when = "before its next wave (none of that wave's requests was sent)"
            detail = (f"{self.requests_planned:,} requests and {self.bytes_planned:,} bytes "
                      "were planned before it")
        self._check(self.requests_planned + requests, self.bytes_planned + nbytes, when,
                    detail)
        if not fm.counted:
            fm.counted = True
            self.files_planned += 1
        self.requests_planned += requests
        self.bytes_planned += nbytes
        self.started = True  # (a first event: nothing done yet, this wave planned)
        self._emit()

    def add(self, n: int) -> None:
        if n > 0:
            self.bytes_done += n
            self._emit()

    def file_done(self) -> None:
        self.files_done += 1
        self._emit()

    def finish(self) -> None:
        """The call ended: a last event if no event has been sent (nothing was read)."""
        if not self.started:
            self.started = True
            self._emit()


class FileMeter:
    """One file's share of a :class:`Meter`: what may be read of it without a new
    wave (what was expected, and the waves grown), what its reads claimed
    (``pipeline.fetch`` calls :meth:`claim` and :meth:`add`)."""

    def __init__(self, meter: Meter, path: str | None = None) -> None:
        self.meter = meter
        self.path = path
        self.counted = False
        self.requests_allowed = self.bytes_allowed = 0
        self.requests_claimed = self.bytes_claimed = 0

    def claim(self, requests: int, nbytes: int) -> None:
        """A read is about to send ``requests`` requests of ``nbytes`` bytes: what goes
        beyond what this file was allowed is a new wave (BudgetError if over)."""
        self.requests_claimed += requests
        self.bytes_claimed += nbytes
        more_r = max(0, self.requests_claimed - self.requests_allowed)
        more_b = max(0, self.bytes_claimed - self.bytes_allowed)
        try:
            self.meter.grow(self, more_r, more_b)
        except BaseException:
            self.requests_claimed -= requests  # refused: nothing of it is sent
            self.bytes_claimed -= nbytes
            raise
        self.requests_allowed += more_r
        self.bytes_allowed += more_b

    def expect(self, requests: int, nbytes: int) -> None:
        """This file's first wave as planned (see :meth:`Meter.expect`)."""
        self.meter.expect([(self, requests, nbytes)])

    def add(self, n: int) -> None:
        self.meter.add(n)

    def done(self) -> None:
        self.meter.file_done()


_CURRENT: contextvars.ContextVar[FileMeter | None] = contextvars.ContextVar(
    "csup_progress", default=None)


@contextlib.contextmanager
def tracking(meter: FileMeter | None) -> Iterator[None]:
    """Report the reads of this task (and the tasks it starts) to ``meter``."""
    token = _CURRENT.set(meter)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_tracker() -> FileMeter | None:
    """The meter of the file being read in this task (read once, when a read starts)."""
    return _CURRENT.get()


async def run_metered(fm: FileMeter, prepare: Callable[[], Awaitable[Planned]]) -> Any:
    """Plan (a row map's read claimed as a wave), expect the first wave, run, done: how
    one file's verb runs under a meter (readers and a dataset's fragments alike)."""
    with tracking(fm):
        planned = await prepare()
        fm.expect(*planned.figures)
        res = await planned.run()
    fm.done()
    return res
