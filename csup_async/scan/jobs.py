"""What a segment source is given and hands back: the plan it streams (its requests), the
object it reads (a Target), and each consumer's read of one segment (a Job) or of a group of
segments (a GroupJob), whose decoded values the consumer takes once they are in."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..format.meta import Segment
from ..stores import Store

Decoder = Callable[[Any], Any]
"""Decompressed segment bytes in, the segment's decoded values out (runs in the pool)."""


class RequestLike(Protocol):
    offset: int
    length: int
    served: bool

    @property
    def end(self) -> int: ...


class PlanLike(Protocol):
    """What the source needs of a plan (``planner.ScanPlan`` or ``planner.RangePlan``)."""

    @property
    def requests(self) -> Sequence[RequestLike]: ...

    @property
    def bytes_needed(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Target:
    """One object version: where to read it, and bytes of it already in hand."""

    store: Store
    key: str
    version: str | None
    path: str  # what errors show (redacted)
    available: tuple[tuple[int, Any], ...] = ()  # (offset, bytes): the tail read and others


class JobSource(Protocol):
    """What a Job needs of the source it was registered with (a fetch.SegmentSource)."""

    eager: bool
    cond: threading.Condition

    def taken(self, job: Job) -> None: ...


class Job:
    """One consumer's read of one segment: its decoded values, once ``done``."""

    __slots__ = ("ahead", "decode", "done", "error", "reqs", "seg", "sent", "source", "value",
                 "wanted")

    def __init__(self, source: JobSource, seg: Segment, decode: Decoder) -> None:
        self.source = source
        self.seg = seg
        self.decode = decode
        self.reqs: tuple[int, ...] = ()
        self.wanted = False
        self.ahead = False  # wanted ahead of its consumer (counted in source.ahead)
        self.sent = False
        self.done = False
        self.value: Any = None
        self.error: BaseException | None = None

    def take(self) -> Any:
        """The decoded segment (blocking, for batches); the job lets go of it, so memory
        follows the consumer.  Raises the job's error, or CancelledError once the source
        is closed."""
        if not self.done:
            if self.source.eager:  # consumers run after settled(): a wait here is a bug
                raise RuntimeError(f"segment at offset {self.seg.offset} taken before it "
                                   "was settled")
            cond = self.source.cond
            with cond:
                while not self.done:
                    cond.wait()
        self.source.taken(self)
        if self.error is not None:
            raise self.error
        out, self.value = self.value, None
        return out


GroupDecoder = Callable[[Any, np.ndarray], tuple[Any, np.ndarray]]
"""The decompressed bytes of a group's segments end to end and where each ends in, the
decoded value and the values of each segment out."""

#: A group whose segments hold fewer stored bytes than this is checked and decoded on the
#: event loop when its bytes are in (a pool hand-off costs more than the work).
INLINE_GROUP_BYTES = 8 << 10


class GroupJob:
    """One consumer's read of many segments at once, for an eager read (a column of a
    file of many super types: hundreds of tiny segments, one job, one decode).  It is
    dispatched when every request holding its segments is complete."""

    __slots__ = ("decode", "done", "error", "expect", "nbytes", "reqs", "segs", "sent", "value",
                 "waiting", "where")

    def __init__(self, segs: list[Segment], decode: GroupDecoder) -> None:
        self.segs = segs
        self.decode = decode
        self.nbytes = 0  # stored bytes of the segments
        self.reqs: tuple[int, ...] = ()
        self.waiting = 0  # requests not yet complete
        self.where: list[tuple[int, int, int, int, bool]] = []  # see SegmentSource.group
        self.expect = np.zeros(0, np.int64)  # per segment: its count, -1 if unknown
        self.sent = False
        self.done = False
        self.value: Any = None
        self.error: BaseException | None = None

    def take(self) -> Any:
        """The decoded group (after the source is settled); raises the group's error."""
        if not self.done:
            raise RuntimeError("a segment group was taken before it was settled")
        if self.error is not None:
            raise self.error
        out, self.value = self.value, None
        return out
