"""Per-endpoint request measurements, shared by the process, for the planner's calibrated profile.

A store records each ranged read it makes (first byte, bytes, transfer time,
whether it opened a connection) under the endpoint it went to: scheme, host
and port, never a path, query or credential.  Every store and reader of the
process that talks to that endpoint shares the window, so a new reader starts
calibrated; :meth:`Measurements.profile` turns the window into a profile with
:func:`planner.calibration.calibrated`, so the planner stays free of I/O.
:func:`to_rows` / :func:`from_rows` are the plain form the on-disk metadata
cache keeps (csup_async/stores/diskcache.py), so a second process starts calibrated too.
"""

from __future__ import annotations

import contextvars
import functools
import math
import threading
from collections import deque
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from planner.calibration import MIN_SAMPLES, Sample, calibrated
from planner.profiles import Profile

WINDOW = 64
REFRESH = 8
"""Once the window is full enough, the measured profile is derived again only after this
many new samples: a plan reads the profile a few times, and deriving it sorts the
window each time (a quarter of a small scan's planning on a service's loop)."""
STEADY = 0.10
"""A measured profile within this fraction of the one last assumed (latency and bandwidth)
keeps that one: measurements jitter with every request, and a plan that changed with
each would never be planned once and reused (``Reader``'s plan memo)."""
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Measurements:
    """The last ``window`` requests of one endpoint."""

    def __init__(self, window: int = WINDOW, endpoint: str = "") -> None:
        self.endpoint = endpoint
        self.samples: deque[Sample] = deque(maxlen=window)
        self.loaded = False  # the on-disk cache was consulted for this endpoint
        self.recorded = 0  # samples recorded in this process
        self.kept = 0  # ``recorded`` when last written to the on-disk cache
        self._assumed: dict[str, Profile] = {}  # by static profile name: last returned
        self._derived: dict[Profile, tuple[int, Profile]] = {}  # static -> (seen, derived)
        self._seen = 0  # samples added, ever (recorded here or restored)
        self.receiving = 0  # bodies from this endpoint being received now
        self.begun = 0  # bodies begun, ever: one begun during another makes both shared

    def begin(self) -> tuple[int, bool]:
        """A body starts arriving: its ticket for :meth:`end`."""
        self.receiving += 1
        self.begun += 1
        return self.begun, self.receiving > 1

    def end(self, ticket: tuple[int, bool]) -> bool:
        """The body of ``ticket`` is done: whether another body arrived during it."""
        self.receiving -= 1
        return ticket[1] or self.begun != ticket[0] or self.receiving > 0

    def __repr__(self) -> str:
        return f"Measurements({self.endpoint!r}, {len(self.samples)} samples)"

    def record(self, first_byte: float, nbytes: int, transfer: float,
               fresh: bool = False, shared: bool = False) -> None:
        self.samples.append(Sample(first_byte, nbytes, transfer, fresh, shared))
        self.recorded += 1
        self._seen += 1

    def extend(self, samples: Iterable[Sample]) -> None:
        """Add samples measured earlier (another process's), oldest first."""
        got = list(samples)
        self.samples.extend(got)
        self._seen += len(got)

    @property
    def enough(self) -> bool:
        """Whether the window is big enough for a measured profile."""
        return sum(not s.fresh for s in self.samples) >= MIN_SAMPLES

    def profile(self, static: Profile, *, calibrate: bool = True) -> Profile:
        """The profile a plan on this endpoint should assume; ``static`` when opted out."""
        if not calibrate:
            return static
        known = self._derived.get(static)
        seen = self._seen
        if known is not None and (known[0] == seen or (
                seen - known[0] < REFRESH and len(self.samples) >= 2 * MIN_SAMPLES)):
            return known[1]
        p = self._derive(static)
        self._derived[static] = (seen, p)
        return p

    def _derive(self, static: Profile) -> Profile:
        p = calibrated(static, list(self.samples))
        if p is static:
            return p
        last = self._assumed.get(static.name)
        if last is not None and _near(last, p):
            return last
        self._assumed[static.name] = p
        return p


def _near(a: Profile, b: Profile) -> bool:
    return (abs(a.latency - b.latency) <= STEADY * a.latency
            and abs(a.bandwidth - b.bandwidth) <= STEADY * a.bandwidth
            and abs(a.connect_latency - b.connect_latency) <= STEADY * max(a.connect_latency,
                                                                             1e-3))


@functools.lru_cache(maxsize=256)
def endpoint_of(url: str) -> str:
    """``scheme://host:port`` of ``url``, lower case, default port filled in: what
    requests to one server have in common (no user, password, path or query)."""
    parts = urlsplit(url)
    scheme = (parts.scheme or "http").lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    except ValueError:
        port = 0
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


_registry: dict[str, Measurements] = {}
_lock = threading.Lock()


def measurements_for(endpoint: str) -> Measurements:
    """The process's window for ``endpoint`` (made on first use)."""
    found = _registry.get(endpoint)
    if found is None:
        with _lock:
            found = _registry.setdefault(endpoint, Measurements(endpoint=endpoint))
    return found


def forget() -> None:
    """Drop every endpoint's measurements (tests, and a process that moved networks)."""
    with _lock:
        _registry.clear()


def to_rows(m: Measurements) -> list[list[Any]]:
    """The window as plain JSON-able rows: ``[first_byte, nbytes, transfer, fresh, shared]``
    (rows of four, from before ``shared``, are read as not shared)."""
    return [[s.first_byte, s.nbytes, s.transfer, s.fresh, s.shared] for s in m.samples]


def from_rows(rows: Any) -> list[Sample]:
    """Samples from :func:`to_rows`' form; anything malformed is skipped, not trusted."""
    out: list[Sample] = []
    if not isinstance(rows, list):
        return out
    for row in rows[-WINDOW:]:
        if not (isinstance(row, list) and len(row) in (4, 5)):
            continue
        fb, n, t, fresh, shared = row if len(row) == 5 else (*row, False)
        if (isinstance(fb, (int, float)) and isinstance(t, (int, float))
                and isinstance(n, int) and not isinstance(n, bool) and isinstance(fresh, bool)
                and isinstance(shared, bool)
                and math.isfinite(fb) and math.isfinite(t) and fb >= 0 and t >= 0 and n >= 0):
            out.append(Sample(float(fb), n, float(t), fresh, shared))
    return out


#: Set for the duration of one request: the store's connection pool marks it when the
#: request had to open a connection (its first byte then also paid the setup).
_OPENED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "csup_connection_opened", default=None)


def watch_connections() -> list[bool]:
    """A flag the current task's next request sets if it opens a connection."""
    box = [False]
    _OPENED.set(box)
    return box


def note_connection_opened() -> None:
    """Called by a connection pool when the current task's request opened a connection."""
    box = _OPENED.get()
    if box is not None:
        box[0] = True
