"""One file's scan plan: projection -> streams -> segments -> requests, as plain data."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain

from csup_async.format.meta import FileMeta, Segment
from csup_async.model.errors import ColumnNotFoundError

from .bill import Prices, bill, prices_for
from .calibration import Calibration
from .coalescing import Request, plan_ranges
from .explain import TYPE_WIDTH, count_of, human, more_lines, request_line, span_of, stream_line
from .profiles import Profile, get_profile, with_amplification
from .projection import Leg, Resolution, StreamRef, normalize_columns, resolve_parsed


class _Unset:
    """Marks "keep the profile's max_amplification" (None already means "no bound")."""

    def __repr__(self) -> str:
        return "<profile's>"


_UNSET = _Unset()


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """What to read from one object for one projection, and why.

    ``requests`` are sorted and disjoint; those marked ``served`` lie inside
    the caller's ``available`` bytes and need no round trip, so
    ``request_count`` and ``bytes_to_read`` count only the others.
    ``bytes_needed`` counts every needed byte once (served or not).
    """

    columns: tuple[str, ...] | None
    missing_paths: tuple[str, ...]
    null_paths: tuple[str, ...]
    bytes_needed: int
    bytes_to_read: int
    request_count: int
    request_cap: int
    available: tuple[int, int] | None
    profile: Profile
    streams: tuple[tuple[StreamRef, ...], ...] = field(repr=False)
    """Per super type (index = super ID), the needed streams."""
    super_stream: StreamRef | None = field(repr=False)
    found: tuple[tuple[str, ...], ...] = field(repr=False)
    """Per super type, the requested paths it has."""
    segments: tuple[Segment, ...] = field(repr=False)
    """Every needed segment once, by offset (zero-length ones too, though no request carries
    them: they need no bytes)."""
    requests: tuple[Request, ...] = field(repr=False)
    meta: FileMeta = field(repr=False, compare=False)
    warm: int = 0
    """Connections the pool had open when this was planned (0: a cold pool)."""
    new_connections: int = 0
    """Connections the requests open beyond ``warm``; each pays ``profile.connect_latency``."""
    seconds: float = 0.0
    """The cost model's wall time for the requests, connection setup included."""
    calibration: Calibration | None = field(default=None, repr=False, compare=False)
    """The profile measured on the endpoint, and whether this plan assumed it (the
    reader's, for ``explain()``); None when the store measures nothing."""
    legs: tuple[tuple[Leg, ...], ...] = field(default=(), repr=False, compare=False)
    """Per column of ``columns``, how each super type that has it holds it: the reader
    builds its cursors from these (the projection is walked once, when planning)."""

    @property
    def amplification(self) -> float:
        """``bytes_to_read / bytes_needed`` (1.0 for an empty plan; < 1 when bytes were served)."""
        return self.bytes_to_read / self.bytes_needed if self.bytes_needed else 1.0

    @property
    def served_count(self) -> int:
        return len(self.requests) - self.request_count

    def explain(self, limit: int = 20, prices: Prices | None = None) -> str:
        """A readable account: columns -> streams -> segments -> requests, amplification,
        and the estimated cost at ``prices`` (default: the store's list prices, bill.py)."""
        return explain_plan(self, limit, prices)


def plan_scan(meta: FileMeta, columns: Iterable[str] | str | None = None,
              profile: str | Profile = "s3", *, available: tuple[int, int] | None = None,
              max_amplification: float | _Unset | None = _UNSET,
              strict: bool = False, warm: int = 0) -> ScanPlan:
    """Plan the reads of ``columns`` (dotted paths; None or [] = all) from one file.

    ``available`` is a byte range of the object the caller already holds
    (typically the metadata tail read): needed bytes inside it are marked
    served.  ``max_amplification`` overrides the profile's bound (None = no
    bound).  ``strict`` raises :class:`ColumnNotFoundError` for a path no
    super type has, instead of only listing it in ``missing_paths``.  ``warm``
    is how many connections the caller's pool has open (0: a cold pool); the
    cost model charges the others ``profile.connect_latency``.
    """
    prof = get_profile(profile)
    if not isinstance(max_amplification, _Unset):
        prof = with_amplification(prof, max_amplification)
    res = resolve_parsed(meta, normalize_columns(columns))
    if strict and res.missing_paths:
        raise ColumnNotFoundError(
            f"no super type has column {', '.join(map(repr, res.missing_paths))}")
    return plan_resolved(meta, res, prof, available, warm)


def plan_resolved(meta: FileMeta, res: Resolution, prof: Profile,
                  available: tuple[int, int] | None, warm: int = 0) -> ScanPlan:
    """Byte-range planning for an already resolved projection (shared with plan_files)."""
    segmaps = [ref.segmap for refs in res.streams for ref in refs]
    if res.super_stream is not None:
        segmaps.append(res.super_stream.segmap)
    rp = plan_ranges(list(chain.from_iterable(segmaps)), prof, available, warm)
    return ScanPlan(
        columns=res.columns, streams=res.streams, super_stream=res.super_stream,
        found=res.found, missing_paths=res.missing_paths, null_paths=res.null_paths,
        segments=rp.segments, requests=rp.requests, bytes_needed=rp.bytes_needed,
        bytes_to_read=rp.bytes_to_read, request_count=rp.request_count,
        request_cap=rp.request_cap, available=available, profile=prof,
        meta=meta, warm=rp.warm, new_connections=rp.new_connections, seconds=rp.seconds,
        legs=res.legs,
    )


def explain_plan(plan: ScanPlan, limit: int = 20, prices: Prices | None = None) -> str:
    p = plan.profile
    out = [
        f"scan plan (profile {p.name}: first byte {p.latency * 1e3:g} ms, "
        f"{p.bandwidth / 1e6:g} MB/s per connection, {p.concurrency} connections; "
        f"merge gaps <= {human(p.gap_limit)}, requests <= {human(plan.request_cap)}"
        + (f", gap bytes <= {p.max_amplification:g} x needed"
           if p.max_amplification is not None else "") + ")",
        "columns: " + ("all" if plan.columns is None
                       else ", ".join(c or '""' for c in plan.columns)),
    ]
    if plan.calibration is not None:
        out.extend(plan.calibration.describe())
    if plan.missing_paths:
        out.append("missing (no super type has them): " + ", ".join(plan.missing_paths))
    if plan.null_paths:
        out.append("all null (nothing to read): " + ", ".join(plan.null_paths))
    types = plan.meta.super_types
    out.append(f"streams ({len(types)} super type{'' if len(types) == 1 else 's'}):")
    for sid, refs in enumerate(plan.streams[:limit]):
        t = str(types[sid]) if sid < len(types) else "?"
        if len(t) > TYPE_WIDTH:
            t = t[: TYPE_WIDTH - 3] + "..."
        has = ""
        if plan.columns is not None:
            has = "  has: " + (", ".join(c or '""' for c in plan.found[sid]) or "none")
        out.append(f"  super type {sid} {t}{has}")
        if not refs:
            out.append("    (nothing to read)")
        out.extend(stream_line(r) for r in refs[:limit])
        rest = refs[limit:]
        if rest:
            n, b = span_of(rest)
            out += more_lines(limit, len(refs), "streams",
                              f" ({count_of(n, 'segment')}, {human(b)})")
    if len(plan.streams) > limit:
        rest_refs = [r for refs in plan.streams[limit:] for r in refs]
        n, b = span_of(rest_refs)
        out += more_lines(limit, len(plan.streams), "super types",
                     f" ({count_of(len(rest_refs), 'stream')}, {count_of(n, 'segment')}, "
                     f"{human(b)})")
    if plan.super_stream is not None:
        out.append("  super column (which super type each row has)")
        out.append(stream_line(plan.super_stream))
    segs = plan.segments
    out.append(f"segments: {len(segs):,} needed, {human(plan.bytes_needed)} "
               f"({plan.bytes_needed:,} bytes)")
    served = plan.served_count
    head = f"requests: {plan.request_count:,} to read, {human(plan.bytes_to_read)}"
    if served:
        a, n = plan.available or (0, 0)
        head += f"; {served} served from available bytes [{a:,} .. {a + n:,})"
    out.append(head)
    if plan.request_count:
        setup = p.connect_latency * 1e3
        out.append(f"connections: {plan.warm} warm, {plan.new_connections} new"
                   + (f" ({setup:g} ms setup each)" if plan.new_connections and setup else "")
                   + f"; estimated {plan.seconds * 1e3:.0f} ms")
    if plan.request_count:
        out.append(str(bill(plan.request_count, plan.bytes_to_read,
                            prices if prices is not None else prices_for(p.name))))
    out.extend(request_line(i, r) for i, r in enumerate(plan.requests[:limit]))
    rest_reqs = plan.requests[limit:]
    out += more_lines(limit, len(plan.requests), "requests",
                 f" ({human(sum(r.length for r in rest_reqs))})")
    if plan.bytes_to_read < plan.bytes_needed:  # a ratio below 1x would mean nothing
        out.append(f"read amplification: none ({plan.bytes_to_read:,} bytes to read for "
                   f"{plan.bytes_needed:,} needed: the tail read held "
                   + ("them)" if plan.bytes_to_read == 0 else "the rest)"))
    else:
        out.append(f"read amplification: {plan.amplification:.3f}x "
                   f"({plan.bytes_to_read:,} bytes to read / {plan.bytes_needed:,} needed)")
    return "\n".join(out)
