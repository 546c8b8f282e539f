"""Filters and row selection against the peers: ``python bench/bench_filter.py [--quick]``.

About 5 minutes (``--quick``: 2 rounds, about 2); ``--cases abf`` runs a subset,
``--readers``, ``--runs`` and ``--out DIR`` as in ``bench/run.py``.

The benchmark of issue 16's targets.  Data: the wide table of :mod:`data`
(1M rows x 24 columns) plus a clustered key ``ts`` (sorted int64), as CSUP
written with our writer's defaults and as Parquet with 64k-row row groups and
statistics (pyarrow's defaults otherwise), generated once into
``bench/.data/filter-v1/``.  The store is the ``s3`` profile of :mod:`netsim`
(nginx behind the delay proxy: 50 ms per round trip, 100 MB/s per connection);
requests, bytes and request waves are counted from nginx's access log.

Readers, each in a process of its own, the same filter and projection:
csup-async (``csup_async.open(url)`` with no store passed, credentials and
endpoint from the environment, one event loop for the process), polars
(``scan_parquet`` + ``filter``), DuckDB (httpfs, ``WHERE``) and
``pyarrow.dataset`` (``to_table(filter=)``).  Each case: one warm-up per reader,
then N rounds in which every reader runs once (the order rotated), so a shared
machine's changing load falls on all readers alike; the median time, requests
and bytes of the last run, and the fewest request waves seen.

Cases (the targets of issue 16):

a. ``ts`` range selecting 1 % of rows, 6 columns; bytes read against the bytes
   of the segments that hold matching rows (:func:`holding_bytes`);
b. point lookup ``ts == x``, all 25 columns: request waves (round trips) and time;
c. ``i1 < 90`` (90 % of rows, a column the data is not sorted by) against the
   unfiltered scan of the same 6 columns, per reader;
d. ``limit=10``: round trips; ``take`` of 100 random rows and ``rows=slice(a, b)``
   of 1 %: bytes read against the segments holding them;
e. checksum verification: a full local scan of every column with
   ``verify_checksums`` on and off (no proxy);
f. the writer's ``segment_thresh`` (256 KiB, 1 MiB, 4 MiB and the writer's
   default): metadata bytes, open and plan time, and cases (a), (b) and the
   unfiltered scan of (c) on each file (csup-async only).

Cached CSUP files are rewritten when the writer's sources change (a merged
writer may cut segments or write statistics differently).

A csup-async feature that is not there yet (``rows=``, ``limit=``, ``take``,
``verify_checksums``) is detected and reported as "not available", never
emulated.  Results: ``bench/results/filter.md`` and ``filter.json``.

Request waves: nginx logs each request's arrival (``$msec - $request_time``);
requests that arrive within 0.6 RTT of the first request of a wave belong to
it, a later one starts the next wave.  A request issued only after an earlier
response arrived is at least one RTT later, so the waves count the round trips
a reader waited for in sequence (one issued late for other reasons, such as
CPU work, counts too: it is waited for all the same).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import data  # noqa: E402

VERSION = "filter-v1"  # bump when the data below changes
ROOT = HERE / ".data" / VERSION
PREFIX = "filter"  # key prefix inside the bucket
RESULTS = HERE / "results"
PROFILE = "s3"
RTT = 0.050  # netsim's s3 profile
ROWS = data.WIDE_ROWS
SIX = data.PROJECTIONS["6 cols"]
ALL = [*data.COLUMNS, "ts"]
RANGE_ROW, RANGE_ROWS = 612_345, ROWS // 100  # case a: rows [612345, 622345)
POINT_ROW = 777_777  # case b
TAKE_ROWS, TAKE_SEED = 100, 16


def _label(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n >> 10} KiB"


def _writer_default() -> int:
    from csup_async.writers.writer import DEFAULT_SEGMENT_THRESH

    return int(DEFAULT_SEGMENT_THRESH)


# case f: these, and the writer's default whatever it is (its file is written with no option)
SEGMENT_THRESHES = {_label(n): n for n in sorted({256 << 10, 1 << 20, 4 << 20,
                                                  _writer_default()})}
DEFAULT_THRESH = _label(_writer_default())
READERS = ["csup-async", "polars", "duckdb httpfs", "pyarrow.dataset"]
PEERS = READERS[1:]
TIMEOUT = 240.0  # seconds a worker may stay silent


def key(name: str) -> str:
    return f"{PREFIX}/{name}"


def csup_name(thresh: str = DEFAULT_THRESH) -> str:
    return "wide.csup" if thresh == DEFAULT_THRESH else f"wide-seg{thresh.replace(' ', '')}.csup"


def local(name: str) -> Path:
    return ROOT / "root" / data.BUCKET / key(name)


# --------------------------------------------------------------- data ---

def make_ts(n: int) -> np.ndarray:
    """A clustered key: millisecond stamps, strictly increasing (so a row is one value)."""
    rng = np.random.default_rng(4242)
    return 1_700_000_000_000 + np.cumsum(rng.integers(1, 200, n))


def writer_fingerprint() -> str:
    """A hash of the writer's sources: cached CSUP files are rewritten when it changes
    (a merged writer may cut segments or write statistics differently)."""
    import hashlib

    import csup_async

    base = Path(csup_async.__file__).parent / "writers"
    h = hashlib.sha256()
    for name in ("writer.py", "writing.py", "arrow_write.py", "segstats.py", "tagenc.py",
                 "batch.py"):
        if (base / name).exists():
            h.update(name.encode() + (base / name).read_bytes())
    return h.hexdigest()[:16]


def ensure(log: Any = print) -> dict[str, Any]:
    """Generate what is missing or stale; return the files' sizes and the cases' constants."""
    info_path = ROOT / "info.json"
    info: dict[str, Any] = json.loads(info_path.read_text()) if info_path.exists() else {}
    fingerprint = writer_fingerprint()
    csup_stale = info.get("writer") != fingerprint or not all(
        local(csup_name(label)).exists() for label in SEGMENT_THRESHES)
    parquet_stale = "constants" not in info or not local("wide.parquet").exists()
    if not (csup_stale or parquet_stale):
        return info
    import pyarrow as pa
    import pyarrow.parquet as pq

    import csup_async

    t0 = time.perf_counter()
    table = data.make_table(ROWS, seed=42)
    ts = make_ts(ROWS)
    table = table.append_column("ts", pa.array(ts, pa.int64()))
    log(f"generated {ROWS:,} rows x {table.num_columns} columns in "
        f"{time.perf_counter() - t0:.1f} s")
    local("x").parent.mkdir(parents=True, exist_ok=True)
    info.setdefault("write_s", {})
    info.setdefault("size", {})
    written = []
    if csup_stale:
        for label, thresh in SEGMENT_THRESHES.items():
            t = time.perf_counter()
            opts = {} if label == DEFAULT_THRESH else {"segment_thresh": thresh}
            csup_async.write(str(local(csup_name(label))), table, **opts)
            info["write_s"][csup_name(label)] = time.perf_counter() - t
            written.append(csup_name(label))
        info["writer"] = fingerprint
    if parquet_stale:
        t = time.perf_counter()
        pq.write_table(table, str(local("wide.parquet")), row_group_size=65536,
                       write_statistics=True)
        info["write_s"]["wide.parquet"] = time.perf_counter() - t
        written.append("wide.parquet")
    for name in written:
        info["size"][name] = local(name).stat().st_size
        log(f"  wrote {name}: {info['size'][name] / 1e6:.1f} MB in "
            f"{info['write_s'][name]:.1f} s")
    take = np.sort(np.random.default_rng(TAKE_SEED).choice(ROWS, TAKE_ROWS, replace=False))
    i1 = table.column("i1").to_numpy()
    info["constants"] = {
        "range": [int(ts[RANGE_ROW]), int(ts[RANGE_ROW + RANGE_ROWS])],
        "point": int(ts[POINT_ROW]),
        "take": take.tolist(),
        "i1_lt_90_rows": int(np.count_nonzero(i1 < 90)),
        "i1_lt_90_i0_sum": int(np.flatnonzero(i1 < 90).sum()),
    }
    info_path.write_text(json.dumps(info, indent=1))
    return info


# ------------------------------------------- segments holding the rows ---

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


# ----------------------------------------------------------- the cases ---

def cases(info: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """Every remote case; ``pred`` is a conjunction of (column, op, literal)."""
    c = info["constants"]
    lo, hi = c["range"]
    rng_sum = sum(range(RANGE_ROW, RANGE_ROW + RANGE_ROWS))
    out = [
        {"id": "a", "label": "a: 1% by ts range, 6 cols", "kind": "filter", "columns": SIX,
         "pred": [["ts", ">=", lo], ["ts", "<", hi]], "rows": RANGE_ROWS, "i0_sum": rng_sum},
        {"id": "b", "label": "b: ts == x, all 25 cols", "kind": "filter", "columns": ALL,
         "pred": [["ts", "==", c["point"]]], "rows": 1, "i0_sum": POINT_ROW},
        {"id": "c90", "label": "c: i1 < 90 (90%), 6 cols", "kind": "filter", "columns": SIX,
         "pred": [["i1", "<", 90]], "rows": c["i1_lt_90_rows"], "i0_sum": c["i1_lt_90_i0_sum"]},
        {"id": "cfull", "label": "c: unfiltered, 6 cols", "kind": "scan", "columns": SIX,
         "rows": ROWS, "i0_sum": ROWS * (ROWS - 1) // 2},
        {"id": "dlimit", "label": "d: limit 10, 6 cols", "kind": "limit", "columns": SIX,
         "n": 10, "rows": 10},
        {"id": "dtake", "label": "d: take 100 rows, 6 cols", "kind": "take", "columns": SIX,
         "indices": c["take"], "rows": TAKE_ROWS, "i0_sum": sum(c["take"])},
        {"id": "dslice", "label": "d: rows 612345:622345, 6 cols", "kind": "slice",
         "columns": SIX, "start": RANGE_ROW, "stop": RANGE_ROW + RANGE_ROWS,
         "rows": RANGE_ROWS, "i0_sum": rng_sum},
    ]
    for case in out:
        case["key"] = key("wide.parquet")
    return out


def segment_cases(info: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """Cases (a), (b) and the unfiltered 6-column scan on each segment size's CSUP
    file, csup-async only: what small segments win, and what they cost a full read."""
    by_id = {c["id"]: c for c in cases(info, quick)}
    return [{**case, "id": f"f{case['id']}|{label}",
             "label": f"f: {case['id']} on segment_thresh {label}",
             "thresh": label, "csup_key": key(csup_name(label))}
            for label in SEGMENT_THRESHES for case in (by_id["a"], by_id["b"], by_id["cfull"])]


def selections(info: dict[str, Any]) -> dict[str, tuple[list[str], Any]]:
    """The columns and rows each yardstick counts: (a) the projection and the filter
    column over the matching rows, (b) every column of one row, (d) the projection of
    the taken rows."""
    return {"a": ([*SIX, "ts"], np.arange(RANGE_ROW, RANGE_ROW + RANGE_ROWS)),
            "b": (ALL, [POINT_ROW]),
            "dtake": (SIX, info["constants"]["take"]),
            "dslice": (SIX, np.arange(RANGE_ROW, RANGE_ROW + RANGE_ROWS))}


def floor_s(nbytes: int) -> float:
    """What the network allows: two round trips (the open, then one wave of data) and
    ``nbytes`` over 16 connections (netsim's floor)."""
    import netsim

    return netsim.PROFILES[PROFILE].floor(nbytes)


# -------------------------------------------------------------- readers ---

OPS = {"==": "__eq__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__",
       "!=": "__ne__"}


def csup_features() -> dict[str, bool]:
    """What this tree's csup-async offers, by its signatures (never by version)."""
    from csup_async.readers.reader import Reader

    scan = inspect.signature(Reader.scan).parameters
    return {"filter": "filter" in scan, "rows": "rows" in scan, "limit": "limit" in scan,
            "take": callable(getattr(Reader, "take", None)),
            "plan_filter": "filter" in inspect.signature(Reader.plan).parameters}


def _csup_filter(pred: list[list[Any]]) -> Any:
    import csup_async

    col = getattr(csup_async, "col", None)
    if col is None:
        from planner.filters import col
    expr = None
    for name, op, v in pred:
        e = getattr(col(name), OPS[op])(v)
        expr = e if expr is None else expr & e
    return expr


class Unavailable(Exception):
    """The reader has no API for this case (yet)."""


class CsupRunner:
    """csup-async the way the README shows it: ``open(url)``, no store passed."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.features = csup_features()

    def __call__(self, case: dict[str, Any]) -> Any:
        return self.loop.run_until_complete(self._run(case))

    async def _run(self, case: dict[str, Any]) -> Any:
        import csup_async

        url = f"s3://{data.BUCKET}/{case.get('csup_key', key('wide.csup'))}"
        kind, cols = case["kind"], case["columns"]
        if kind == "limit" and not self.features["limit"]:
            raise Unavailable("Reader.scan has no limit= parameter")
        if kind == "take" and not self.features["take"]:
            raise Unavailable("Reader has no take()")
        if kind == "slice" and not self.features["rows"]:
            raise Unavailable("Reader.scan has no rows= parameter")
        async with csup_async.open(url) as r:
            if kind == "filter":
                res = await r.scan(cols, filter=_csup_filter(case["pred"]))
            elif kind == "scan":
                res = await r.scan(cols)
            elif kind == "limit":
                res = await r.scan(cols, limit=case["n"])
            elif kind == "slice":
                res = await r.scan(cols, rows=slice(case["start"], case["stop"]))
            else:
                res = await r.take(case["indices"], cols)
        return res.to_arrow() if hasattr(res, "to_arrow") else res


class PolarsRunner:
    def __init__(self, endpoint: str) -> None:
        from readers import BUCKET, KEY_ID, REGION, SECRET

        self.opts = {"aws_endpoint_url": endpoint, "aws_access_key_id": KEY_ID,
                     "aws_secret_access_key": SECRET, "aws_region": REGION,
                     "aws_allow_http": "true"}
        self.bucket = BUCKET

    def __call__(self, case: dict[str, Any]) -> Any:
        import polars as pl

        lf = pl.scan_parquet(f"s3://{self.bucket}/{case['key']}", storage_options=self.opts)
        kind, cols = case["kind"], case["columns"]
        if kind == "filter":
            expr = None
            for name, op, v in case["pred"]:
                e = getattr(pl.col(name), OPS[op])(v)
                expr = e if expr is None else expr & e
            lf = lf.filter(expr).select(cols)
        elif kind == "scan":
            lf = lf.select(cols)
        elif kind == "limit":
            lf = lf.select(cols).head(case["n"])
        elif kind == "slice":
            lf = lf.select(cols).slice(case["start"], case["stop"] - case["start"])
        else:
            lf = (lf.with_row_index("__row").filter(pl.col("__row").is_in(case["indices"]))
                  .select(cols))
        return lf.collect().to_arrow()


class DuckRunner:
    """One connection for the process (as a service keeps it), its caches off."""

    def __init__(self, endpoint: str) -> None:
        import duckdb
        import readers

        self.con = duckdb.connect()
        self.con.execute(f"LOAD '{readers._httpfs_path()}'")
        host = endpoint.split("://", 1)[1]
        for stmt in (f"SET s3_endpoint='{host}'", "SET s3_url_style='path'",
                     "SET s3_use_ssl=false", f"SET s3_region='{readers.REGION}'",
                     f"SET s3_access_key_id='{readers.KEY_ID}'",
                     f"SET s3_secret_access_key='{readers.SECRET}'", "SET threads=16",
                     "SET enable_external_file_cache=false",
                     "SET enable_http_metadata_cache=false"):
            self.con.execute(stmt)
        self.bucket = readers.BUCKET

    def __call__(self, case: dict[str, Any]) -> Any:
        url = f"'s3://{self.bucket}/{case['key']}'"
        kind = case["kind"]
        cols = ", ".join(f'"{c}"' for c in case["columns"])
        if kind == "filter":
            where = " AND ".join(f'"{n}" {"=" if op == "==" else op} {v!r}'
                                 for n, op, v in case["pred"])
            sql = f"SELECT {cols} FROM read_parquet({url}) WHERE {where}"
        elif kind == "scan":
            sql = f"SELECT {cols} FROM read_parquet({url})"
        elif kind == "limit":
            sql = f"SELECT {cols} FROM read_parquet({url}) LIMIT {case['n']}"
        elif kind == "slice":
            sql = (f"SELECT {cols} FROM read_parquet({url}) "
                   f"LIMIT {case['stop'] - case['start']} OFFSET {case['start']}")
        else:
            rows = ", ".join(map(str, case["indices"]))
            sql = (f"SELECT {cols} FROM read_parquet({url}, file_row_number=true) "
                   f"WHERE file_row_number IN ({rows})")
        return self.con.execute(sql).fetch_arrow_table()


class PyarrowRunner:
    """``pyarrow.dataset`` over pyarrow's S3FileSystem, a fresh dataset per run."""

    def __init__(self, endpoint: str) -> None:
        import readers

        self.endpoint = endpoint.split("://", 1)[1]
        self.r = readers

    def __call__(self, case: dict[str, Any]) -> Any:
        import pyarrow.dataset as ds
        import pyarrow.fs as pafs

        r = self.r
        fs = pafs.S3FileSystem(access_key=r.KEY_ID, secret_key=r.SECRET, region=r.REGION,
                               endpoint_override=self.endpoint, scheme="http")
        dset = ds.dataset(f"{r.BUCKET}/{case['key']}", format="parquet", filesystem=fs)
        kind, cols = case["kind"], case["columns"]
        if kind == "filter":
            expr = None
            for name, op, v in case["pred"]:
                e = getattr(ds.field(name), OPS[op])(v)
                expr = e if expr is None else expr & e
            return dset.to_table(columns=cols, filter=expr)
        if kind == "scan":
            return dset.to_table(columns=cols)
        if kind == "limit":
            return dset.head(case["n"], columns=cols)
        if kind == "slice":
            return dset.take(np.arange(case["start"], case["stop"]), columns=cols)
        return dset.take(case["indices"], columns=cols)


# --------------------------------------------------------- nginx's log ---

def timed_log_format() -> None:
    """Have nginx log each request's time too (appended after the fields netsim counts)."""
    import netsim

    plain = "$uri';"
    if "$msec" not in netsim._NGINX_CONF:
        if plain not in netsim._NGINX_CONF:
            raise RuntimeError("netsim's nginx log format changed: cannot add request times")
        netsim._NGINX_CONF = netsim._NGINX_CONF.replace(plain, "$uri $msec $request_time';")


def count_log(log: Path, mark: int, quiet: float = 0.3, most: float = 15.0) -> dict[str, Any]:
    """Requests, body bytes and request waves nginx logged since ``mark``, once the log
    has been quiet for ``quiet`` seconds: some readers keep fetching ahead after they
    have returned (pyarrow's readahead after ``head``), and those requests are theirs,
    not the next reader's."""
    size, since, deadline = log.stat().st_size, time.monotonic(), time.monotonic() + most
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = log.stat().st_size
        if now != size:
            size, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    starts, requests, nbytes, heads, errors = [], 0, 0, 0, 0
    with open(log, "rb") as f:
        f.seek(mark)
        for line in f:
            parts = line.split()
            if len(parts) < 4:
                continue
            requests += 1
            heads += parts[0] == b"HEAD"
            errors += not parts[1].startswith(b"2")
            nbytes += int(parts[2])
            if len(parts) >= 7:
                starts.append(float(parts[-2]) - float(parts[-1]))
    return {"requests": requests, "bytes": nbytes, "heads": heads, "errors": errors,
            "waves": request_waves(starts) if len(starts) == requests else None}


def request_waves(starts: Sequence[float], rtt: float = RTT) -> int:
    """How many rounds of requests, by arrival time (see the module's docstring)."""
    waves, first = 0, None
    for s in sorted(starts):
        if first is None or s - first >= 0.6 * rtt:
            waves += 1
            first = s
    return waves


# -------------------------------------------------------------- worker ---

SLOW = 30.0  # a reader whose warm-up takes longer runs a case once
BUDGET = 15.0  # seconds of timed runs per case and reader, at least one run


def _check(table: Any, case: dict[str, Any]) -> str | None:
    """What is wrong with a reader's answer, or None."""
    import pyarrow.compute as pc

    if table.num_rows != case["rows"]:
        return f"{table.num_rows} rows, expected {case['rows']}"
    if list(table.column_names) != list(case["columns"]):
        return f"columns {table.column_names}"
    if "i0_sum" in case and pc.sum(table.column("i0")).as_py() != case["i0_sum"]:
        return "the wrong rows (sum of the row ids differs)"
    return None


def csup_local_verify(path: str, runs: int) -> dict[str, Any]:
    """Case (e): full local scan of every column, checksums verified and not."""
    import csup_async

    async def scan(**opts: Any) -> float:
        t = time.perf_counter()
        async with csup_async.open(path, **opts) as r:
            res = await r.scan(None)
        assert res.num_rows == ROWS
        return time.perf_counter() - t

    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        try:
            await scan(verify_checksums=False)
        except (csup_async.CsupError, TypeError) as e:
            if "verify_checksums" not in str(e):
                raise
            out["unavailable"] = f"open(..., verify_checksums=) not accepted ({e})"[:200]
        await scan()  # warm-up (page cache, thread pool)
        plain, on, off = [], [], []
        for _ in range(max(runs, 5)):  # cheap, and a few percent needs several pairs
            if "unavailable" in out:
                plain.append(await scan())
            else:
                on.append(await scan(verify_checksums=True))
                off.append(await scan(verify_checksums=False))
        if plain:
            out["default_s"] = statistics.median(plain)
        else:
            out.update(on_s=statistics.median(on), off_s=statistics.median(off),
                       on=on, off=off)
        return out

    return asyncio.run(go())


def csup_open_plan(url: str, path: str, pred: list[list[Any]], runs: int) -> dict[str, Any]:
    """Case (f): open at s3 (metadata requests), open of the local copy (reading and
    parsing the metadata, no network) and planning case (a), per file."""
    import csup_async

    feats = csup_features()

    async def go() -> dict[str, Any]:
        opens, plans, parses = [], [], []
        for _ in range(runs + 1):
            t = time.perf_counter()
            async with csup_async.open(path):
                parses.append(time.perf_counter() - t)
            t = time.perf_counter()
            async with csup_async.open(url) as r:
                t1 = time.perf_counter()
                if feats["plan_filter"]:
                    await r.plan(SIX, filter=_csup_filter(pred))
                else:
                    await r.plan([*SIX, "ts"])
                t2 = time.perf_counter()
                reqs, got = r.open_stats.requests, r.open_stats.bytes_read
            opens.append(t1 - t)
            plans.append(t2 - t1)
        # CPU alone (local open, plan): the best of the runs, the least disturbed by a
        # shared machine; the open at s3 waits on the network: the median
        return {"open_s": statistics.median(opens[1:]), "plan_s": min(plans[1:]),
                "local_open_s": min(parses[1:]), "open_requests": reqs,
                "open_bytes": got,
                "plan_with_filter": feats["plan_filter"]}

    return asyncio.run(go())


def worker(reader: str, endpoint: str) -> None:
    """Serve one reader: a JSON command per stdin line, a JSON answer per stdout line.

    ``{"op": "run", "case": ...}`` runs a case once and answers its time (or why it
    could not run); ``verify`` and ``open_plan`` run csup-async's local cases whole.
    """
    if reader == "csup-async":
        fn: Any = CsupRunner()
        hello: dict[str, Any] = {"features": fn.features}
    elif reader == "polars":
        fn, hello = PolarsRunner(endpoint), {}
    elif reader == "duckdb httpfs":
        fn, hello = DuckRunner(endpoint), {}
    else:
        fn, hello = PyarrowRunner(endpoint), {}
    print(json.dumps({"ready": True, **hello}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "exit":
                return
            if cmd["op"] == "verify":
                res = csup_local_verify(cmd["path"], cmd["runs"])
            elif cmd["op"] == "open_plan":
                res = csup_open_plan(cmd["url"], cmd["path"], cmd["pred"], cmd["runs"])
            else:
                t = time.perf_counter()
                table = fn(cmd["case"])
                res = {"s": time.perf_counter() - t}
                bad = _check(table, cmd["case"])
                if bad:
                    res = {"error": f"wrong answer: {bad}"}
        except Unavailable as e:
            res = {"unavailable": str(e)}
        except Exception as e:  # reported in the results, not hidden
            res = {"error": f"{type(e).__name__}: {e}"[:300],
                   "trace": traceback.format_exc()[-1200:]}
        print(json.dumps(res), flush=True)


class Worker:
    """A reader's process, driven one command at a time."""

    def __init__(self, reader: str, endpoint: str) -> None:
        import queue
        import threading

        import readers

        env = dict(os.environ)
        env.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": readers.KEY_ID,
                    "AWS_SECRET_ACCESS_KEY": readers.SECRET,
                    "AWS_DEFAULT_REGION": readers.REGION, "AWS_EC2_METADATA_DISABLED": "true"})
        self.reader = reader
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", reader, "--endpoint", endpoint],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.err: list[str] = []

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.put(line)
            self.lines.put(None)

        def drain() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.err = [*self.err[-20:], line]

        threading.Thread(target=pump, daemon=True).start()
        threading.Thread(target=drain, daemon=True).start()
        self.hello = self._answer()
        self.dead = "error" in self.hello

    def _answer(self) -> dict[str, Any]:
        import queue

        while True:
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                self.proc.kill()
                return {"error": f"no answer within {TIMEOUT:.0f} s"}
            if line is None:
                return {"error": f"worker exited: {''.join(self.err)[-300:]}"}
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue  # a library's own print

    def ask(self, cmd: dict[str, Any]) -> dict[str, Any]:
        if self.dead:
            return {"error": "worker not running"}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        res = self._answer()
        if res.get("error", "").startswith(("no answer", "worker exited")):
            self.dead = True
        return res

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.ask({"op": "exit"})
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def run_case(workers: list[Worker], case: dict[str, Any], runs: int, log: Path
             ) -> dict[str, dict[str, Any]]:
    """One warm-up per reader, then ``runs`` rounds with every reader once per round
    (the order rotated each round), so a machine's changing load falls on all alike."""
    import netsim

    out: dict[str, dict[str, Any]] = {}
    live: list[Worker] = []
    for w in workers:
        mark = netsim.log_mark(log)
        res = w.ask({"op": "run", "case": case})
        count_log(log, mark)  # let its reads ahead end before the next reader starts
        if "s" not in res:
            out[w.reader] = res
            _print_row(w.reader, case["id"], res)
            continue
        out[w.reader] = {"warm": res["s"], "times": [], "counts": []}
        live.append(w)
    for i in range(runs):
        for w in live[i % len(live):] + live[: i % len(live)] if live else []:
            r = out[w.reader]
            if "error" in r or (r["times"] and (r["warm"] >= SLOW
                                                or sum(r["times"]) + r["warm"] > BUDGET)):
                continue
            mark = netsim.log_mark(log)
            res = w.ask({"op": "run", "case": case})
            if "s" not in res:
                out[w.reader] = res
                continue
            r["times"].append(res["s"])
            r["counts"].append(count_log(log, mark))
    for w in live:
        r = out[w.reader]
        if "times" not in r:
            _print_row(w.reader, case["id"], r)
            continue
        if not r["times"]:  # a warm-up over SLOW seconds is its one sample
            r["times"] = [r["warm"]]
        last = r["counts"][-1] if r["counts"] else {"requests": 0, "bytes": 0, "heads": 0,
                                                      "errors": 0, "waves": None}
        waves = [c["waves"] for c in r["counts"] if c["waves"] is not None]
        r.update(median=statistics.median(r["times"]), requests=last["requests"],
                 bytes=last["bytes"], heads=last["heads"], errors=last["errors"],
                 waves=min(waves) if waves else None, waves_each=waves)
        _print_row(w.reader, case["id"], r)
    return out


def _print_row(reader: str, case: str, r: dict[str, Any]) -> None:
    head = f"  {case:14} {reader:16}"
    if "median" in r:
        print(f"{head} {r['median']:7.3f} s {r['requests']:5d} req "
              f"{r['waves'] if r['waves'] is not None else '-':>3} waves "
              f"{r['bytes'] / 1e6:8.2f} MB", flush=True)
    elif "unavailable" in r and "default_s" not in r:
        print(f"{head} not available: {r['unavailable']}", flush=True)
    elif "error" in r:
        print(f"{head} ERROR {r['error'][:200]}", flush=True)
    else:
        print(f"{head} " + json.dumps({k: v for k, v in r.items() if k not in ("on", "off")}),
              flush=True)


# ----------------------------------------------------------- analysis ---

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


def _x(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}"


def _mb(n: float | None) -> str:
    return "-" if n is None else f"{n / 1e6:.2f}"


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "missed")


def analyse(res: dict[str, Any]) -> None:
    """Ratios to the best peer, the floors, and the targets' verdicts (``res['targets']``:
    one entry per target, ``ok`` None where the case could not run)."""
    rows = res["rows"]
    yard = res["yardsticks"]

    def get(reader: str, case: str) -> dict[str, Any]:
        return rows.get(reader, {}).get(case, {})

    def best_peer(case: str) -> float | None:
        got = [get(p, case).get("median") for p in PEERS]
        got = [g for g in got if g is not None]
        return min(got) if got else None

    for by_case in rows.values():
        for cid, r in by_case.items():
            best = best_peer(cid)
            if "median" in r and best:
                r["x_best_peer"] = r["median"] / best
    for reader in rows:
        c90, full = get(reader, "c90"), get(reader, "cfull")
        if "median" in c90 and "median" in full:
            c90["x_unfiltered"] = c90["median"] / full["median"]
    me = rows.get("csup-async", {})
    targets: list[dict[str, Any]] = []

    def target(name: str, measured: str, ok: bool | None, floor: str = "") -> None:
        targets.append({"target": name, "measured": measured, "ok": ok, "floor": floor})

    def time_floor(case: str) -> str:
        f, best = floor_s(yard[case]["bytes"]), best_peer(case)
        return f"{f:.3f} s = {_x(f, best)} x best peer" if best else f"{f:.3f} s"

    a, b = me.get("a", {}), me.get("b", {})
    ran_a, ran_b = "median" in a, "median" in b
    target(f"a: bytes read <= 1.3 x the segments holding matching rows "
           f"({_mb(yard['a']['bytes'])} MB: {', '.join(SIX)} and the filter column ts)",
           f"{_mb(a.get('bytes'))} MB = {_x(a.get('bytes'), yard['a']['bytes'])} x",
           a["bytes"] <= 1.3 * yard["a"]["bytes"] if ran_a else None)
    target("a: time <= 0.5 x best peer", f"{_x(a.get('x_best_peer'), 1)} x",
           a.get("x_best_peer", 9) <= 0.5 if ran_a else None, time_floor("a"))
    target("b: point lookup, all columns, <= 3 round trips", f"{b.get('waves', '-')} waves",
           (b["waves"] or 99) <= 3 if ran_b else None)
    target("b: time <= 0.5 x best peer", f"{_x(b.get('x_best_peer'), 1)} x",
           b.get("x_best_peer", 9) <= 0.5 if ran_b else None, time_floor("b"))
    c90 = me.get("c90", {})
    target("c: 90% filter <= 1.15 x the unfiltered scan of the same columns",
           f"{_x(c90.get('x_unfiltered'), 1)} x",
           c90["x_unfiltered"] <= 1.15 if "x_unfiltered" in c90 else None)
    lim = me.get("dlimit", {})
    target("d: limit=10 <= 2 round trips", f"{lim.get('waves', '-')} waves",
           (lim["waves"] or 99) <= 2 if "median" in lim else None)
    opened = res["segments"].get(DEFAULT_THRESH, {}).get("open_plan", {}).get("open_bytes",
                                                                              1 << 20)
    for cid, what in (("dtake", "take of 100 rows"), ("dslice", "rows=slice(a, b), 1%")):
        run = me.get(cid, {})
        target(f"d: {what} reads only the segments holding them "
               f"({_mb(yard[cid]['bytes'])} MB; allowed: those, 5% and the open's "
               f"{opened / 1e6:.2f} MB)",
               f"{_mb(run.get('bytes'))} MB = {_x(run.get('bytes'), yard[cid]['bytes'])} x",
               run["bytes"] <= yard[cid]["bytes"] * 1.05 + opened if "median" in run
               else None)
    e = res.get("verify", {})
    cost = e["on_s"] / e["off_s"] - 1 if "on_s" in e else None
    target("e: checksum verification <= 5% of a full local scan",
           "-" if cost is None else f"{cost * 100:+.1f}%",
           None if cost is None else cost <= 0.05)
    res["targets"] = targets


# ------------------------------------------------------------- report ---

def _verdicts(targets: list[dict[str, Any]]) -> list[str]:
    out = ["| target | measured | floor (2 round trips + segments holding the rows over "
           "16 connections) | verdict |", "|---|---|---|---|"]
    for t in targets:
        out.append(f"| {t['target']} | {t['measured']} | {t['floor'] or '-'} | "
                   f"{_verdict(t['ok'])} |")
    return out


def _f_table(res: dict[str, Any]) -> list[str]:
    rows = res["rows"].get("csup-async", {})
    out = ["| segment_thresh | segments | metadata KB | open at s3 s (requests) | "
           "local open ms | plan ms | a: s, MB read | a: MB holding (floor s) | "
           "b: s, MB read | b: MB holding (floor s) | unfiltered 6 cols: s, requests |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    nan = float("nan")
    for label in SEGMENT_THRESHES:
        f = res["segments"].get(label, {})
        op = f.get("open_plan", {})
        cells = [f"{label}{' (default)' if label == DEFAULT_THRESH else ''}",
                 str(f.get("segments", "-")), f"{f.get('metadata_bytes', 0) / 1e3:.1f}",
                 f"{op.get('open_s', nan):.3f} ({op.get('open_requests', '-')})",
                 f"{op.get('local_open_s', nan) * 1e3:.1f}", f"{op.get('plan_s', nan) * 1e3:.2f}"]
        for case in ("a", "b"):
            run = rows.get(f"f{case}|{label}", {})
            held = f.get("holding", {}).get(case)
            cells.append(f"{run.get('median', nan):.3f}, {_mb(run.get('bytes'))}"
                         if "median" in run else run.get("error", run.get("unavailable", "-")))
            cells.append(f"{_mb(held)} ({floor_s(held):.3f})" if held is not None else "-")
        full = rows.get(f"fcfull|{label}", {})
        cells.append(f"{full['median']:.3f}, {full['requests']}" if "median" in full else "-")
        out.append("| " + " | ".join(cells) + " |")
    return out


def report(res: dict[str, Any]) -> str:
    cfg, rows = res["config"], res["rows"]
    feats = {k: v for k, v in rows.get("csup-async", {}).get("features", {}).items()
             if k != "case"}
    size = res["info"]["size"]
    out = [f"# Filters and row selection (issue 16 targets), {PROFILE} profile", "",
           f"Command: `{cfg['command']}` ({cfg['elapsed_s'] / 60:.1f} min), "
           f"{cfg['runs']} timed rounds per case after a warm-up, every reader once per "
           f"round (median; fewer when a reader's case exceeds {BUDGET:.0f} s). Machine: "
           f"{cfg['machine']}; load average at the start {cfg['load']}. Versions: "
           f"{cfg['versions']}.", "",
           f"Data: the wide table of `bench/data.py` ({ROWS:,} rows x 24 columns) plus `ts`, "
           f"a sorted int64 key; CSUP with the writer's defaults "
           f"({size[csup_name()] / 1e6:.0f} MB), Parquet with 64k-row row groups and "
           f"statistics ({size['wide.parquet'] / 1e6:.0f} MB). Store: nginx behind "
           f"`bench/netsim.py`'s delay proxy, 50 ms per round trip, 100 MB/s per "
           f"connection. Requests and MB are counted by nginx (last timed run); waves = "
           f"rounds of requests in sequence, from request arrival times at nginx (a new "
           f"wave when a request arrives 0.6 RTT or more after the current wave's first), "
           f"the fewest of the timed runs (a starved CPU adds waves). "
           f"csup-async: `csup_async.open(url)` with no store passed; polars: "
           f"`scan_parquet().filter()`; DuckDB: httpfs, `WHERE` (take: `file_row_number "
           f"IN (...)`); pyarrow.dataset: `to_table(filter=)`, `head`, `take`.", "",
           "csup-async features found in this tree: "
           + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in feats.items()) + ".", "",
           "| case | reader | median s | requests | waves | MB read | x best peer |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for case in res["cases"]:
        if case["id"].startswith("f"):
            continue
        for reader in READERS:
            r = rows.get(reader, {}).get(case["id"], {})
            if "median" in r:
                out.append(f"| {case['label']} | {reader} | {r['median']:.3f} | "
                           f"{r['requests']} | {r['waves'] if r['waves'] is not None else '-'}"
                           f" | {_mb(r['bytes'])} | {_x(r.get('x_best_peer'), 1)} |")
            else:
                why = ("not available: " + r["unavailable"] if "unavailable" in r
                       else "error: " + r.get("error", "not run"))
                out.append(f"| {case['label']} | {reader} | {why[:90]} | | | | |")
    out += ["", "## Targets", "", *_verdicts(res["targets"]), "",
            "Time ratios compare with the best of polars, DuckDB and pyarrow.dataset in the "
            "same run. The 'segments holding' yardstick (`holding_bytes`): per column, the "
            "stored bytes of the value segments whose value-index range (running sum of the "
            "segments' `count`) holds a selected row's value, plus, for a column with nulls, "
            "the presence segments covering a selected row; (a) counts the filter column "
            "too, which a reader must read to evaluate the filter exactly. The floor is the "
            "least time a reader can take reading exactly those bytes: the open's round "
            "trip, one round trip of data (with `count` statistics the other columns' "
            "segments follow from the key's, so one data wave suffices) and the bytes over "
            "16 connections at 100 MB/s."]
    c_rows = []
    for reader in READERS:
        c90 = rows.get(reader, {}).get("c90", {})
        full = rows.get(reader, {}).get("cfull", {})
        if "x_unfiltered" in c90:
            c_rows.append(f"| {reader} | {c90['median']:.3f} | {full['median']:.3f} | "
                          f"{c90['x_unfiltered']:.2f} |")
    if c_rows:
        out += ["", "## c: the 90% filter against the unfiltered scan, per reader", "",
                "| reader | filtered s | unfiltered s | ratio |", "|---|---:|---:|---:|",
                *c_rows]
    e, est = res.get("verify", {}), res.get("crc_estimate", {})
    if e or est:
        out += ["", "## e: checksum verification, full local scan of all 25 columns", ""]
    if "on_s" in e:
        out.append(f"verify on {e['on_s']:.3f} s, off {e['off_s']:.3f} s: "
                   f"{(e['on_s'] / e['off_s'] - 1) * 100:+.1f}% (median of {len(e['on'])}, "
                   f"alternating).")
    elif e:
        out.append(f"Not available: {e.get('unavailable', e.get('error', '?'))}. Full local "
                   f"scan today (no verification): {e.get('default_s', float('nan')):.3f} s.")
    base = e.get("off_s", e.get("default_s"))
    if est and base:
        out.append(f"Estimate, not the feature: CRC-32 over all {est['segments']} segments' "
                   f"stored bytes ({est['bytes'] / 1e6:.0f} MB) on one thread takes "
                   + ", ".join(f"{s:.3f} s with {k} ({s / base * 100:.1f}% of that scan)"
                               for k, s in est["kernels"].items())
                   + " if it ran serially; spread over the decode threads it costs less "
                   "wall time. The checksums the writer stored were all checked here.")
    planned = next((f["open_plan"].get("plan_with_filter") for f in res["segments"].values()
                    if "open_plan" in f), None)
    if planned is None:
        return "\n".join(out)
    out += ["", "## f: writer segment size (segment_thresh) against statistics' usefulness",
            "", *_f_table(res), "",
            "csup-async runs of (a), (b) and the unfiltered scan of case (c) on each file; "
            "'MB holding' is the yardstick above for that file and its floor what a reader "
            "that reads only those bytes could "
            "reach. local open ms: `open()` of the local copy (metadata read and parsed, no "
            "network), best of the runs; plan ms: `reader.plan(...)` on the open reader, best "
            "of the runs,"
            + (" with the filter." if planned else
               " of the 6 columns and ts (this tree's plan takes no filter)."), ""]
    return "\n".join(out)


# --------------------------------------------------------------- main ---

def _versions() -> str:
    import duckdb
    import polars
    import pyarrow

    import csup_async

    return (f"csup-async {csup_async.__version__}, polars {polars.__version__}, "
            f"duckdb {duckdb.__version__}, pyarrow {pyarrow.__version__}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 timed runs per case")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per case (default 5)")
    ap.add_argument("--readers", default=",".join(READERS), help="comma-separated subset")
    ap.add_argument("--cases", default="abcdef", help="which of the cases a-f to run")
    ap.add_argument("--out", default=str(RESULTS), help="results directory")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.endpoint)
        return
    import netsim

    t_start = time.perf_counter()
    load = os.getloadavg()
    runs = args.runs or (2 if args.quick else 5)
    names = args.readers.split(",")
    print("data:", flush=True)
    info = ensure(log=lambda m: print("  " + m, flush=True))
    all_cases = [c for c in cases(info, args.quick) if c["id"][0] in args.cases]
    seg_cases = segment_cases(info, args.quick) if "f" in args.cases else []
    print("yardsticks and metadata:", flush=True)
    main_csup = local(csup_name())
    yard = {k: holding_bytes(main_csup, cols, sel)
            for k, (cols, sel) in selections(info).items()}
    segments: dict[str, Any] = {}
    for label in SEGMENT_THRESHES:
        p = local(csup_name(label))
        segs = column_segments(p)
        segments[label] = {
            "file_bytes": p.stat().st_size, "metadata_bytes": metadata_bytes(p),
            "segments": sum(len(s["values"]) + len(s["presence"]) for s in segs.values()),
            "holding": {k: holding_bytes(p, cols, sel)["bytes"]
                        for k, (cols, sel) in selections(info).items() if k in ("a", "b")}}
        print(f"  {label}: {segments[label]}", flush=True)
    timed_log_format()
    store = netsim.SimStore(ROOT / "root", ROOT / "nginx").start()
    rows: dict[str, dict[str, Any]] = {n: {} for n in names}
    verify: dict[str, Any] = {}
    workers: list[Worker] = []
    try:
        endpoint = store.endpoint(PROFILE)
        for name in names:
            workers.append(Worker(name, endpoint))
            if "features" in workers[-1].hello:
                rows[name]["features"] = workers[-1].hello["features"]
        csup = [w for w in workers if w.reader == "csup-async"]
        print("cases (interleaved: every reader once per round):", flush=True)
        for case in all_cases:
            for name, r in run_case(workers, case, runs, store.log).items():
                rows[name][case["id"]] = r
        for case in seg_cases:
            for name, r in run_case(csup, case, runs, store.log).items():
                rows[name][case["id"]] = r
        for w in csup if "f" in args.cases else []:
            for label in SEGMENT_THRESHES:
                got = w.ask({"op": "open_plan", "pred": seg_cases[0]["pred"],
                             "path": str(local(csup_name(label))),
                             "url": f"s3://{data.BUCKET}/{key(csup_name(label))}",
                             "runs": runs})
                segments[label]["open_plan"] = got
                _print_row(w.reader, f"open {label}", got)
        for w in csup if "e" in args.cases else []:
            verify = w.ask({"op": "verify", "path": str(main_csup), "runs": runs})
            _print_row(w.reader, "e (local)", verify)
    finally:
        for w in workers:
            w.close()
        store.stop()
    est: dict[str, Any] = {}
    if "e" in args.cases:
        print("crc32 estimate:", flush=True)
        est = crc_estimate(main_csup)
    res: dict[str, Any] = {
        "rows": rows, "cases": [{k: v for k, v in x.items() if k != "indices"}
                                for x in all_cases + seg_cases],
        "yardsticks": {k: {"bytes": v["bytes"], "columns": {
            n: {kk: vv for kk, vv in col.items() if kk == "bytes" or kk == "of_segments"}
            | {"segments": len(col["value_segments"]) + len(col["presence_segments"])}
            for n, col in v["columns"].items()}} for k, v in yard.items()},
        "segments": segments, "verify": verify, "crc_estimate": est, "info": info}
    analyse(res)
    res["config"] = {"command": " ".join(["python", "bench/bench_filter.py", *sys.argv[1:]]),
                     "runs": runs, "quick": args.quick,
                     "machine": f"{os.cpu_count()} cores, {platform.machine()}, "
                                f"Python {platform.python_version()}, {platform.system()}",
                     "versions": _versions(), "elapsed_s": time.perf_counter() - t_start,
                     "load": " ".join(f"{x:.1f}" for x in load)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "filter.json").write_text(json.dumps(res, indent=1, default=str))
    text = report(res)
    (out / "filter.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
