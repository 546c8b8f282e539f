"""Hedged range reads: a second copy of a late request, so one slow server does not set the pace.

A pinned range read (``If-Match`` on the version its metadata named) can be sent
twice without any risk of mixing versions: both copies are the same bytes or
one of them fails with 412.  So when a request's response has not begun by the
endpoint's observed 95th percentile time-to-first-byte (held between a floor
and a cap), the same request goes out on another connection; whichever answers
first is read, the other is cancelled (its connection closed).

Two guards keep hedging from making an outage worse: no hedge before the
endpoint has ``min_samples`` measurements (the percentile would be a guess),
and a token bucket that earns ``budget`` of a hedge per request sent and
spends one per hedge, so hedges are at most ``budget`` of the requests over
any stretch (5% by default), plus nothing up front.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ..model.errors import CsupError

__all__ = ["DEFAULT_HEDGE", "HedgeCounter", "HedgePolicy", "HedgeState", "counting", "hedged"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class HedgePolicy:
    """When to send a second copy of a pinned range request.

    ``quantile`` of the last ``window`` first-byte times, at least ``floor`` and
    at most ``cap`` seconds; no hedging before ``min_samples`` measurements;
    hedges at most ``budget`` of the requests (a token bucket holding at most
    ``burst`` hedges).
    """

    quantile: float = 0.95
    floor: float = 0.05
    cap: float = 0.5
    window: int = 200
    min_samples: int = 20
    budget: float = 0.05
    burst: float = 10.0

    def __post_init__(self) -> None:
        if not 0.0 < self.quantile < 1.0:
            raise CsupError(f"HedgePolicy.quantile must lie between 0 and 1, not {self.quantile}")
        if not 0.0 <= self.floor <= self.cap:
            raise CsupError("HedgePolicy needs 0 <= floor <= cap "
                            f"(floor={self.floor}, cap={self.cap})")
        if self.window < 1 or self.min_samples < 0:
            raise CsupError("HedgePolicy.window must be >= 1 and min_samples >= 0")
        if not 0.0 <= self.budget <= 1.0 or self.burst < 1.0:
            raise CsupError("HedgePolicy.budget must lie in [0, 1] and burst be >= 1")


DEFAULT_HEDGE = HedgePolicy()


class HedgeCounter(Protocol):
    """What hedging reports to (a scan's ScanStats has these two fields)."""

    hedges: int
    hedge_wins: int


_COUNTER: contextvars.ContextVar[HedgeCounter | None] = contextvars.ContextVar(
    "csup_hedge_counter", default=None)


def counting(counter: HedgeCounter) -> None:
    """Report the current task's hedges (and the tasks it starts) to ``counter``."""
    _COUNTER.set(counter)


class HedgeState:
    """One endpoint's first-byte times and hedge budget; the store's running totals."""

    def __init__(self, policy: HedgePolicy) -> None:
        self.policy = policy
        self.samples: deque[float] = deque(maxlen=policy.window)
        self.tokens = 0.0
        self.requests = 0  # primaries sent
        self.hedges = 0  # second copies sent
        self.wins = 0  # second copies that answered first
        self._delay: float | None = None

    def observe(self, seconds: float) -> None:
        self.samples.append(seconds)
        self._delay = None

    def delay(self) -> float | None:
        """Seconds to wait for a first byte before hedging; None: do not hedge yet."""
        p = self.policy
        if len(self.samples) < max(1, p.min_samples):
            return None
        if self._delay is None:
            ordered = sorted(self.samples)
            q = ordered[min(len(ordered) - 1, math.ceil(p.quantile * len(ordered)) - 1)]
            self._delay = min(p.cap, max(p.floor, q))
        return self._delay

    def sent(self) -> None:
        self.requests += 1
        self.tokens = min(self.policy.burst, self.tokens + self.policy.budget)

    def take(self) -> bool:
        """Spend a hedge if the budget has one."""
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        self.hedges += 1
        return True


async def hedged(state: HedgeState, send: Callable[[], Awaitable[T]],
                 discard: Callable[[T | None], None]) -> T:
    """``send()``, and once more if the first has not answered in time; the first answer.

    ``discard`` releases a copy that lost the race: its reply, or None if it was
    cancelled before it had one (its connection, if it made one, is closed).
    A failure of one copy waits for the other; if both fail, the first copy's
    error is raised.
    """
    loop = asyncio.get_running_loop()
    state.sent()
    t0 = loop.time()
    wait = state.delay()
    if wait is None:  # not armed: no task in between (the body is read as soon as it can be)
        result = await send()
        state.observe(loop.time() - t0)
        return result
    first = asyncio.ensure_future(send())
    done, _ = await _wait_or_cancel({first}, wait, discard)
    if done or not state.take():
        return await _timed(state, first, t0, discard)
    counter = _COUNTER.get()
    if counter is not None:
        counter.hedges += 1
    # The primary's true first byte is later than ``wait``: count it as ``wait``
    # (a lower bound), so the percentile does not drift on the copies alone.
    state.observe(wait)
    second = asyncio.ensure_future(send())
    pending: set[asyncio.Future[T]] = {first, second}
    errors: dict[asyncio.Future[T], BaseException] = {}
    while pending:
        done, pending = await _wait_or_cancel(pending, None, discard)
        for task in (first, second):
            if task not in done:
                continue
            err = task.exception()
            if err is not None:
                errors[task] = err
                continue
            for other in (first, second):
                if other is not task and other not in errors:
                    _drop(other, discard)  # pending, or done in the same instant
            if task is second:
                state.wins += 1
                if counter is not None:
                    counter.hedge_wins += 1
            return task.result()
    raise errors.get(first) or errors[second]


async def _timed(state: HedgeState, task: asyncio.Future[T], t0: float,
                 discard: Callable[[T | None], None]) -> T:
    try:
        result = await asyncio.shield(task)
    except asyncio.CancelledError:
        _drop(task, discard)
        raise
    state.observe(asyncio.get_running_loop().time() - t0)
    return result


async def _wait_or_cancel(tasks: set[asyncio.Future[T]], timeout: float | None,
                          discard: Callable[[T | None], None]
                          ) -> tuple[set[asyncio.Future[T]], set[asyncio.Future[T]]]:
    """asyncio.wait(FIRST_COMPLETED); if we are cancelled, every copy is dropped too."""
    try:
        return await asyncio.wait(tasks, timeout=timeout,
                                  return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        for task in tasks:
            _drop(task, discard)
        raise


def _drop(task: asyncio.Future[T], discard: Callable[[T | None], None]) -> None:
    """Cancel a copy and hand its reply (None if it never got one) to ``discard``."""
    def settle(t: asyncio.Future[T]) -> None:
        ok = not t.cancelled() and t.exception() is None
        discard(t.result() if ok else None)

    if task.done():
        settle(task)
    else:
        task.cancel()
        task.add_done_callback(settle)
