"""Plans as text a person can read, bounded in length however big the plan is.

Every list (super types, streams, requests, files, tasks) shows at most
``limit`` entries and then one "... and N more" line with the totals of the
rest, so a plan of 10,000 segments explains in a screenful.
"""

from __future__ import annotations

from .coalescing import Request
from .projection import StreamRef

TYPE_WIDTH = 72


def shown(name: str) -> str:
    """A file's name as any rendering shows it: the one redaction (a signed URL's query
    and a ``user:password@`` hidden).  The name itself stays whole: it is what reads
    and lookups use."""
    from csup_async.model.redact import redact_url

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


def span_of(refs: tuple[StreamRef, ...] | list[StreamRef]) -> tuple[int, int]:
    segs = [s for r in refs for s in r.segmap]
    return len(segs), sum(s.length for s in segs)


def stream_line(ref: StreamRef) -> str:
    segs = ref.segmap
    lo = min(s.offset for s in segs)
    hi = max(s.offset + s.length for s in segs)
    where = f"@{lo:,}" if len(segs) == 1 else f"[{lo:,} .. {hi:,})"
    label = ref.path or ("(super IDs)" if ref.role == "super" else "(value)")
    count = f"{len(segs):,} seg" + ("" if len(segs) == 1 else "s")
    return f"    {label:<28} {ref.role:<8} {count:>10} {human(ref.nbytes):>10}  {where}"


def request_line(i: int, r: Request) -> str:
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


def count_of(n: int, what: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def more_lines(shown: int, total: int, what: str, detail: str = "") -> list[str]:
    if total <= shown:
        return []
    return [f"    ... and {total - shown:,} more {what}{detail}"]
