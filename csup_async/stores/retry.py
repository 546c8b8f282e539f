"""One retry policy for every store: bounded attempts and time, full jitter, Retry-After.

Why not ``tenacity`` or ``stamina``?  Both were weighed.  ``stamina``'s jitter is
additive (``wait_initial * base**n + uniform(0, jitter)``), not the full jitter
asked for, and it adds instrumentation hooks we do not want on a hot path.
``tenacity`` can express full jitter, a Retry-After floor (a custom ``wait``)
and "stop before the deadline" (``stop_before_delay``), but its loop owns the
attempt: ``AttemptManager`` swallows *every* exception raised in the block,
``GeneratorExit`` and ``CancelledError`` included, and decides afterwards.  Our
streaming reads are async generators that resume a broken body from the byte
they reached, so one retry budget spans many ``yield`` points; putting those
yields inside tenacity's ``with attempt:`` would route consumer cancellation
through its retry predicate.  The loop needed is a dozen lines with no
dependency, so it is written here, once, and every store uses it the same way::

    attempts = policy.start(path)
    while True:
        try:
            return await one_try()
        except Retryable as e:
            await attempts.failed(e)   # sleeps, or raises the final typed error
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import logging
import random
import time
from dataclasses import dataclass

from ..model.errors import CsupError, StoreError

__all__ = ["DEFAULT_RETRY", "NO_RETRY", "Attempts", "RetryPolicy", "Retryable",
           "parse_retry_after"]

log = logging.getLogger("csup_async.stores")


class Retryable(StoreError):
    """A failure worth another try; ``error`` is what the caller sees if none is left.

    It is a StoreError itself only so that nothing but a CsupError can ever
    escape, even through a path that forgot the retry loop.
    """

    def __init__(self, error: StoreError, retry_after: float | None = None) -> None:
        super().__init__(error.message, path=error.path)
        self.error = error
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard a store tries: at most ``attempts`` tries, none started after
    ``total_timeout`` seconds, sleeping ``uniform(0, min(max_delay, base_delay * 2**n))``
    between them (full jitter: retries of many readers do not synchronise), or
    longer when the server's Retry-After asks for it."""

    attempts: int = 5
    base_delay: float = 0.1
    max_delay: float = 5.0
    total_timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise CsupError(f"RetryPolicy.attempts must be at least 1, not {self.attempts}")
        if min(self.base_delay, self.max_delay) < 0 or self.total_timeout <= 0:
            raise CsupError("RetryPolicy delays must be >= 0 and total_timeout > 0")

    def start(self, path: str | None, *, deadline: float | None = None) -> Attempts:
        """The retry state of one operation; ``deadline`` (event-loop time) ends it sooner."""
        return Attempts(self, path, deadline)


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(attempts=1)


class Attempts:
    """The retry state of one operation."""

    def __init__(self, policy: RetryPolicy, path: str | None,
                 deadline: float | None = None) -> None:
        self.policy = policy
        self.path = path
        self.deadline = deadline
        self.count = 0
        self.last_delay = 0.0  # the latest sleep, for diagnostics
        self._t0 = time.monotonic()

    async def failed(self, exc: Retryable) -> None:
        """Sleep before the next try, or raise ``exc.error`` if the budget is spent."""
        self.count += 1
        p = self.policy
        elapsed = time.monotonic() - self._t0
        remaining = p.total_timeout - elapsed
        if self.deadline is not None:
            remaining = min(remaining, self.deadline - asyncio.get_running_loop().time())
        backoff = random.uniform(0.0, min(p.max_delay, p.base_delay * 2 ** (self.count - 1)))
        delay = max(backoff, exc.retry_after or 0.0)
        if self.count >= p.attempts or delay >= remaining:
            why = "" if self.count >= p.attempts else (
                "; the next try would start after the retry budget or the timeout")
            raise self._final(exc.error, elapsed, why) from None
        log.debug("retrying %s in %.3f s after: %s (try %d of %d)",
                  self.path, delay, exc.error.message, self.count, p.attempts)
        self.last_delay = delay
        await asyncio.sleep(delay)

    def _final(self, err: StoreError, elapsed: float, why: str) -> StoreError:
        if self.count <= 1 and not why:
            return err
        return type(err)(f"{err.message} (gave up after {self.count} tries in "
                         f"{elapsed:.2f} s{why})", path=err.path)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value (delay-seconds or an HTTP date).

    Fractional seconds are accepted although the RFC allows only integers:
    some servers (and our tests) send them, and reading them costs nothing.
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # "-0000" dates parse naive; HTTP dates are UTC
        when = when.replace(tzinfo=datetime.UTC)
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)
