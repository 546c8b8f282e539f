"""Plans as text a person can read, bounded in length however big the plan is.

Every list (super types, streams, requests, files, tasks) shows at most
``limit`` entries and then one "... and N more" line with the totals of the
rest, so a plan of 10,000 segments explains in a screenful.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .bill import Prices, bill, prices_for
from .coalescing import Request
from .projection import StreamRef

if TYPE_CHECKING:
    from .multi import MultiPlan
    from .plan import ScanPlan

_TYPE_WIDTH = 72


def shown(name: str) -> str:
    """A file's name as any rendering shows it: the one redaction (a signed URL's query
    and a ``user:password@`` hidden).  The name itself stays whole: it is what reads
    and lookups use."""
    from csup_async.stores.redact import redact_url

    return redact_url(name)


def human(n: float) -> str:
    """Bytes with a binary unit: ``1.5 MiB``."""
    if n < 1024:
        return f"{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"
    raise AssertionError  # unreachable


def _span(refs: tuple[StreamRef, ...] | list[StreamRef]) -> tuple[int, int]:
    segs = [s for r in refs for s in r.segmap]
    return len(segs), sum(s.length for s in segs)


def _stream_line(ref: StreamRef) -> str:
    segs = ref.segmap
    lo = min(s.offset for s in segs)
    hi = max(s.offset + s.length for s in segs)
    where = f"@{lo:,}" if len(segs) == 1 else f"[{lo:,} .. {hi:,})"
    label = ref.path or ("(super IDs)" if ref.role == "super" else "(value)")
    count = f"{len(segs):,} seg" + ("" if len(segs) == 1 else "s")
    return f"    {label:<28} {ref.role:<8} {count:>10} {human(ref.nbytes):>10}  {where}"


def _request_line(i: int, r: Request) -> str:
    gap = r.length - r.needed_bytes
    notes = []
    if gap:
        notes.append(f"gap {human(gap)}")
    split = r.partial_segments
    if split:
        notes.append(f"{split} partial segment" + ("" if split == 1 else "s"))
    if r.served:
        notes.append("served from available bytes")
    tail = f"  ({', '.join(notes)})" if notes else ""
    n = len(r.segments)
    return (f"    #{i:<5} offset {r.offset:>14,}  length {human(r.length):>10}  "
            f"{n:,} segment{'' if n == 1 else 's'}{tail}")


def _count(n: int, what: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def _more(shown: int, total: int, what: str, detail: str = "") -> list[str]:
    if total <= shown:
        return []
    return [f"    ... and {total - shown:,} more {what}{detail}"]


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
    if plan.missing_paths:
        out.append("missing (no super type has them): " + ", ".join(plan.missing_paths))
    if plan.null_paths:
        out.append("all null (nothing to read): " + ", ".join(plan.null_paths))
    types = plan.meta.super_types
    out.append(f"streams ({len(types)} super type{'' if len(types) == 1 else 's'}):")
    for sid, refs in enumerate(plan.streams[:limit]):
        t = str(types[sid]) if sid < len(types) else "?"
        if len(t) > _TYPE_WIDTH:
            t = t[: _TYPE_WIDTH - 3] + "..."
        has = ""
        if plan.columns is not None:
            has = "  has: " + (", ".join(c or '""' for c in plan.found[sid]) or "none")
        out.append(f"  super type {sid} {t}{has}")
        if not refs:
            out.append("    (nothing to read)")
        out.extend(_stream_line(r) for r in refs[:limit])
        rest = refs[limit:]
        if rest:
            n, b = _span(rest)
            out += _more(limit, len(refs), "streams", f" ({_count(n, 'segment')}, {human(b)})")
    if len(plan.streams) > limit:
        rest_refs = [r for refs in plan.streams[limit:] for r in refs]
        n, b = _span(rest_refs)
        out += _more(limit, len(plan.streams), "super types",
                     f" ({_count(len(rest_refs), 'stream')}, {_count(n, 'segment')}, "
                     f"{human(b)})")
    if plan.super_stream is not None:
        out.append("  super column (which super type each row has)")
        out.append(_stream_line(plan.super_stream))
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
    out.extend(_request_line(i, r) for i, r in enumerate(plan.requests[:limit]))
    rest_reqs = plan.requests[limit:]
    out += _more(limit, len(plan.requests), "requests",
                 f" ({human(sum(r.length for r in rest_reqs))})")
    if plan.bytes_to_read < plan.bytes_needed:  # a ratio below 1x would mean nothing
        out.append(f"read amplification: none ({plan.bytes_to_read:,} bytes to read for "
                   f"{plan.bytes_needed:,} needed: the tail read held "
                   + ("them)" if plan.bytes_to_read == 0 else "the rest)"))
    else:
        out.append(f"read amplification: {plan.amplification:.3f}x "
                   f"({plan.bytes_to_read:,} bytes to read / {plan.bytes_needed:,} needed)")
    return "\n".join(out)


def explain_multi(mp: MultiPlan, limit: int = 20) -> str:
    p = mp.profile
    n_tasks = len(mp.tasks)
    size = (f" of {human(mp.bytes_needed / n_tasks)} on average (target "
            f"{human(mp.target_task_bytes)})" if n_tasks else "")
    out = [
        f"multi-file plan (profile {p.name}): {_count(len(mp.files), 'file')} to read, "
        f"{len(mp.pruned):,} pruned, {_count(n_tasks, 'task')}{size}",
        "columns: " + ("all" if mp.columns is None
                       else ", ".join(c or '""' for c in mp.columns)),
    ]
    if mp.missing_paths:
        out.append("missing in every file: " + ", ".join(mp.missing_paths))
    amp = (f"amplification {mp.amplification:.3f}x" if mp.bytes_to_read >= mp.bytes_needed
           else "the tail reads held " + ("them" if not mp.bytes_to_read else "the rest"))
    out.append(f"requests: {mp.request_count:,}, {human(mp.bytes_to_read)} to read for "
               f"{human(mp.bytes_needed)} needed ({amp})")
    out.append("tasks:")
    for t in mp.tasks[:limit]:
        names = ", ".join(shown(f.name) for f in t.files[:3])
        if len(t.files) > 3:
            names += f", ... ({len(t.files):,} files)"
        out.append(f"    task {t.index:<5} {_count(t.request_count, 'request'):>15} "
                   f"{human(t.bytes_to_read):>10}  {names}")
    out += _more(limit, len(mp.tasks), "tasks")
    if mp.pruned:
        out.append("pruned:")
        out.extend(f"    {shown(f.name)}: {f.reason}" for f in mp.pruned[:limit])
        out += _more(limit, len(mp.pruned), "pruned files")
    return "\n".join(out)
