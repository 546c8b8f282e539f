"""What a filtered read of the benchmark's files must fetch, counted from their metadata:
each column's segments, the bytes of the segments holding the selected rows (presence
runs followed), the metadata's bytes, and a CRC pass's cost."""

from __future__ import annotations

import statistics
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def column_segments(path: str | Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Each top-level column's value segmap and presence segmap, every segmap element
    as the file records it (``offset``, ``length``, ... and the statistics fields
    ``count``, ``min``, ``max`` where written), read from the file's metadata.

    Parsed here from the raw reassembly values rather than the reader's metadata
    tree, which keeps only the fields the reader uses.
    """
    from csup_async.format import bsup
    from csup_async.format.csup import _reassembly_values, find_trailer

    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(max(0, size - 65536))
        tail = f.read()
        trailer = find_trailer(tail, size)
        f.seek(trailer.data_size)
        section = f.read(trailer.reassembly_size)
    values = _reassembly_values(section, 1 << 30)
    n = len(values) // 2
    if n != 1:
        raise ValueError(f"{path}: {n} super types; the bench's files have one")
    tree = bsup.decode_value(*values[n + 1])
    out = {}
    for name, fld in tree.items():
        out[name] = {"values": list(fld["column"] or []), "presence": list(fld["presence"] or [])}
    return out


def _stream(f: Any, segs: list[dict[str, Any]]) -> bytes:
    """The decompressed column stream of ``segs`` (read from the open file ``f``)."""
    from csup_async.decode.columns import decompress_segment
    from csup_async.format.meta import Segment

    parts = []
    for s in segs:
        f.seek(s["offset"])
        raw = f.read(s["length"])
        seg = Segment(s["offset"], s["length"], s.get("mem_length", s["length"]),
                      s.get("compression_format", 0))
        parts.append(bytes(decompress_segment(raw, seg)))
    return b"".join(parts)


def _presence_runs(f: Any, segs: list[dict[str, Any]]) -> np.ndarray:
    from csup_async.decode.columns import decode_primitive
    from csup_async.model.types import INT32

    runs = decode_primitive(INT32, _stream(f, segs)).values
    return np.asarray(runs, np.int64)


def _counts(segs: list[dict[str, Any]], what: str) -> np.ndarray:
    if any(s.get("count") is None for s in segs):
        raise ValueError(f"{what}: a segment without a 'count' statistic (written with "
                         f"statistics=False?): cannot map rows to segments")
    return np.array([s["count"] for s in segs], np.int64)


def holding_bytes(path: str | Path, columns: Sequence[str], rows: Any) -> dict[str, Any]:
    """Stored bytes of the segments that hold the rows ``rows`` of ``columns``.

    The yardstick of issue 16's first target.  For each column: the value segments
    whose value-index range (running sum of the segments' ``count``) holds the value
    of a selected row that is not null, and, for a column with nulls, the presence
    segments whose runs cover a selected row.  ``rows`` are row numbers (any order,
    repeats allowed).  Returns the total, and per column the bytes and segments.
    """
    rows = np.unique(np.asarray(rows, np.int64))
    segmaps = column_segments(path)
    per: dict[str, Any] = {}
    with open(path, "rb") as f:
        for name in dict.fromkeys(columns):
            cols = segmaps[name]
            vals, pres = cols["values"], cols["presence"]
            picked_p: list[int] = []
            if pres:
                runs = _presence_runs(f, pres)
                run_end = np.cumsum(runs)  # row after each run
                is_present = (np.arange(runs.size) % 2) == 0
                present = np.repeat(is_present, runs)  # one flag per row
                if rows.size and rows[-1] >= present.size:
                    raise ValueError(f"{name}: row {rows[-1]} past the {present.size} rows")
                value_index = np.cumsum(present) - 1
                vidx = value_index[rows][present[rows]]
                # presence segment j holds runs [c_j, c_j+1); rows [start of c_j, end of last)
                rcum = np.concatenate(([0], np.cumsum(_counts(pres, f"{name} presence"))))
                row_start = np.concatenate(([0], run_end))
                seg_rows = row_start[rcum]  # first row of each segment, then the end
                hit = np.searchsorted(seg_rows, rows, side="right") - 1
                picked_p = sorted({int(j) for j in hit if 0 <= j < len(pres)})
            else:
                vidx = rows
            ends = np.cumsum(_counts(vals, name)) if vals else np.zeros(0, np.int64)
            if vidx.size and (not ends.size or vidx[-1] >= ends[-1]):
                raise ValueError(f"{name}: value {int(vidx[-1])} past the column's values")
            picked_v = sorted(set(np.searchsorted(ends, vidx, side="right").tolist()))
            nbytes = (sum(vals[j]["length"] for j in picked_v)
                      + sum(pres[j]["length"] for j in picked_p))
            per[name] = {"bytes": nbytes, "value_segments": picked_v,
                         "presence_segments": picked_p,
                         "of_segments": len(vals) + len(pres)}
    return {"bytes": sum(p["bytes"] for p in per.values()), "columns": per}


def metadata_bytes(path: str | Path) -> int:
    """Bytes of the reassembly section and trailer: what an open must fetch."""
    from csup_async.format.csup import find_trailer

    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(max(0, size - 65536))
        trailer = find_trailer(f.read(), size)
    return size - trailer.data_size


def crc_estimate(path: Path, runs: int = 3) -> dict[str, Any]:
    """CRC-32 over every segment's stored bytes, one thread: what verification adds at
    most if it runs serially beside a scan (an estimate, not the feature), with
    zlib and, where installed, zlib-ng (the same polynomial, a faster kernel)."""
    segs = [s for c in column_segments(path).values() for s in (*c["values"], *c["presence"])]
    mv = memoryview(path.read_bytes())
    kernels = {"zlib": zlib.crc32}
    try:
        from zlib_ng import zlib_ng

        kernels["zlib-ng"] = zlib_ng.crc32
    except ImportError:
        pass
    out: dict[str, Any] = {"bytes": sum(s["length"] for s in segs), "segments": len(segs),
                           "kernels": {}}
    for name, crc in kernels.items():
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            for s in segs:
                got = crc(mv[s["offset"]: s["offset"] + s["length"]])
                if s.get("crc32") is not None and got != s["crc32"]:
                    raise ValueError(f"{path}: segment at {s['offset']}: crc32 mismatch")
            times.append(time.perf_counter() - t)
        out["kernels"][name] = statistics.median(times)
    out["crc32_s"] = out["kernels"]["zlib"]
    return out
