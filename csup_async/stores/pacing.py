"""Pacing under throttling: one request rate per bucket for the whole process.

Retry-After and backoff slow down the request that was refused; they do not
slow the thousand other scans that share the bucket and are about to be
refused too.  So every 429 or 503 (S3's SlowDown, GCS's rate limit) also
tells a pacer shared by the process, per (scheme, host, port, first path
segment: the bucket in path-style URLs, a prefix otherwise).  Unthrottled, a
pacer costs one dictionary lookup per request and never waits.  Once
throttled it lets requests go at a rate it adapts (AIMD, as TCP does):

* it starts at ``decrease`` times the rate the server accepted over the last second (counting
  the acceptances that arrive in the ``cooldown`` after the first refusal:
  a burst's answers come back in any order): the accepted rate is the
  server's limit, and pacing right at it would keep touching it,
* every later refusal multiplies the rate by ``decrease`` (at most once per
  ``cooldown`` seconds, so one burst of refusals counts once),
* every second without a refusal adds ``increase`` of the rate (at least one
  request a second), and after ``release`` seconds without one pacing stops;
* it never goes below ``min_rate`` (10 a second): a stray 503 after a quiet
  spell (when little was accepted) must not slow the next burst to a crawl.

Requests wait for their slot before they are sent, so a paced request never
counts against its own retry budget or deadline.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from dataclasses import dataclass

__all__ = ["PacingPolicy", "Pacer", "pacer_for"]


@dataclass(frozen=True, slots=True)
class PacingPolicy:
    decrease: float = 0.7
    increase: float = 0.1
    cooldown: float = 0.5
    release: float = 10.0
    min_rate: float = 10.0


class Pacer:
    """The request rate of one bucket, shared by every store and thread of the process."""

    def __init__(self, policy: PacingPolicy | None = None) -> None:
        self.policy = policy or PacingPolicy()
        self.rate: float | None = None  # requests a second; None: not pacing
        self.throttles = 0
        self.waited = 0.0  # seconds requests spent waiting for a slot, in all
        self._lock = threading.Lock()
        self._ok: deque[float] = deque()  # times of accepted requests, the last second
        self._next = 0.0  # the earliest time the next request may be sent
        self._last_throttle = 0.0
        self._last_change = 0.0
        self._learning_until = 0.0
        self._gen = 0  # bumped when the rate falls: reserved slots are void

    def _slot(self, now: float) -> tuple[float, int]:
        """Reserve the next send time (``now`` if not pacing) and the rate's generation."""
        with self._lock:
            rate = self.rate
            if rate is None:
                return now, self._gen
            p = self.policy
            quiet = now - self._last_throttle
            if quiet > p.release:
                self.rate = None
                return now, self._gen
            if now > self._last_change and quiet > p.cooldown:
                rate += (now - self._last_change) * max(1.0, p.increase * rate)
                self.rate = rate
                self._last_change = now
            slot = max(now, self._next)
            self._next = slot + 1.0 / rate
            return slot, self._gen

    async def wait(self) -> None:
        """Sleep until this request's slot (no sleep when the bucket is not throttled).

        A slot reserved before the rate fell is reserved again at the new rate
        when it comes: requests already queued slow down too.
        """
        while self.rate is not None:
            now = time.monotonic()
            slot, gen = self._slot(now)
            if slot <= now:
                return
            self.waited += slot - now
            await asyncio.sleep(slot - now)
            if gen == self._gen:
                return

    def record(self, throttled: bool) -> None:
        """A response arrived: refused with 429/503 (``throttled``) or not."""
        now = time.monotonic()
        with self._lock:
            if not throttled:
                self._ok.append(now)
                while self._ok and now - self._ok[0] > 1.0:
                    self._ok.popleft()
                if self.rate is not None and now < self._learning_until:
                    # the rest of the first refused burst: what the server took is the rate
                    self.rate = max(self.rate, self.policy.decrease * len(self._ok))
                return
            self.throttles += 1
            p = self.policy
            if self.rate is None:
                self.rate = max(p.min_rate, p.decrease * len(self._ok))
                self._next = now
                self._learning_until = now + p.cooldown
            elif now - self._last_throttle > p.cooldown:
                self.rate = max(p.min_rate, self.rate * p.decrease)
                self._next = now + 1.0 / self.rate
                self._gen += 1
            else:
                return  # the same burst of refusals: counted once
            self._last_throttle = self._last_change = now


_PACERS: dict[tuple[str, str, int | None, str], Pacer] = {}
_PACERS_LOCK = threading.Lock()


def pacer_for(scheme: str, host: str, port: int | None, path: str) -> Pacer:
    """The process's pacer for the bucket (or first path segment) of a request URL."""
    first = path.lstrip("/").split("/", 1)[0]
    key = (scheme.lower(), host.lower(), port, first)
    pacer = _PACERS.get(key)
    if pacer is None:
        with _PACERS_LOCK:
            pacer = _PACERS.setdefault(key, Pacer())
    return pacer
