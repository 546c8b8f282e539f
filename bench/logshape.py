"""Real-shaped data: seeded log records as NDJSON, Parquet and CSUP.

``python bench/logshape.py [--rows N] [--seed S] [--out DIR] [--force]``

Writes ``DIR/logs.ndjson`` (the source), ``DIR/logs.parquet`` (polars reading that
NDJSON, the peer's own file) and ``DIR/logs.csup`` (csup-async's ``write`` of the same
records, fused); by default 200,000 records (~50 MB NDJSON) into
``bench/.data/logshape-v1/``.  Generation is deterministic in ``seed``: the same
arguments give the same bytes.

The shape is that of service logs rather than uniform noise, because selection and
writing costs depend on it:

* ``ts``: RFC 3339 text with microseconds, increasing (a string, not a time);
* ``level``: ``info`` / ``warn`` / ``error`` (about 90 / 8.5 / 1.5 %);
* ``svc``, ``host``, ``msg``: strings (a few services, hosts, free-ish text);
* ``u``: ``{name, id, geo?: {country, city}}``, missing in ~5 % of records,
  ``geo`` missing in ~30 % of those present, ``name`` null in ~2 %;
* ``code``: an int (an HTTP status) or a string (an error code) — a union;
* ``dur``: an int (whole milliseconds) or a float — another union;
* ``tags``: an array of 0-3 strings;
* ``req``: ``{id: hex, bytes: int|null}``;
* ``trace``: a hex string, null, or missing.

Import it to get the paths: ``logshape.ensure()`` returns ``{"ndjson", "parquet",
"csup"}`` paths, generating what is missing.  The common selection of the benchmarks:
``COLUMNS`` (``ts``, ``u.name``) filtered by ``FILTER`` (``level = 'error'``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent / ".data" / "logshape-v1"
ROWS = 200_000
SEED = 38
COLUMNS = ["ts", "u.name"]
FILTER = "level = 'error'"
POLARS_FILTER_COLUMN, POLARS_FILTER_VALUE = "level", "error"

_SVCS = ["api", "auth", "billing", "search", "web", "worker", "cache", "mailer"]
_PATHS = ["/v1/items", "/v1/users", "/v1/orders", "/login", "/logout", "/health",
          "/v2/search", "/v1/cart", "/static/app.js", "/v1/payments"]
_METHODS = ["GET", "GET", "GET", "POST", "PUT", "DELETE"]
_WORDS = ["timeout", "retry", "connection", "reset", "upstream", "cache", "miss", "slow",
          "query", "refused", "backend", "queue", "full", "token", "expired", "invalid"]
_ERRCODES = ["E_TIMEOUT", "E_REFUSED", "E_AUTH", "E_QUOTA", "E_INTERNAL"]
_TAGS = ["prod", "canary", "eu", "us", "beta", "mobile", "web", "batch", "retry", "internal"]
_GEO = [("DE", "Berlin"), ("DE", "Munich"), ("FR", "Paris"), ("US", "New York"),
        ("US", "Seattle"), ("JP", "Tokyo"), ("BR", "Sao Paulo"), ("IN", "Bengaluru"),
        ("GB", "London"), ("NL", "Amsterdam")]
_FIRST = ["ana", "ben", "chen", "dara", "eli", "fatima", "gus", "hana", "ivan", "jo",
          "kofi", "lena", "mateo", "nia", "omar", "pia", "quinn", "ravi", "sara", "tomas"]


def records(n: int = ROWS, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """The ``n`` records, as Python dicts (in file order); deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    # Everything random is drawn up front, in vectors: the loop only assembles.
    t0 = 1_795_000_000_000_000  # microseconds since the epoch (2026-11-18)
    ts = t0 + np.cumsum(rng.integers(0, 6_000, n))
    lvl = rng.random(n)
    level = np.where(lvl < 0.015, 2, np.where(lvl < 0.10, 1, 0))
    svc = rng.integers(0, len(_SVCS), n)
    host = rng.integers(0, 64, n)
    path = rng.integers(0, len(_PATHS), n)
    method = rng.integers(0, len(_METHODS), n)
    item = rng.integers(1, 100_000, n)
    words = rng.integers(0, len(_WORDS), (n, 3))
    u_missing = rng.random(n) < 0.05
    geo_missing = rng.random(n) < 0.30
    name_null = rng.random(n) < 0.02
    uid = rng.integers(1, 50_000, n)
    first = rng.integers(0, len(_FIRST), n)
    geo = rng.integers(0, len(_GEO), n)
    status = rng.choice([200, 200, 200, 201, 204, 301, 304, 400, 404, 429], n)
    errcode = rng.integers(0, len(_ERRCODES), n)
    dur_int = rng.random(n) < 0.6
    dur = rng.gamma(2.0, 20.0, n)
    ntags = rng.integers(0, 4, n)
    tagv = rng.integers(0, len(_TAGS), (n, 4))
    req_raw = rng.integers(0, 1 << 62, n)
    req_bytes = rng.integers(0, 1 << 20, n)
    req_null = rng.random(n) < 0.03
    trace_kind = rng.random(n)
    trace_raw = rng.integers(0, 1 << 62, n)

    lv = ("info", "warn", "error")
    for i in range(int(n)):
        us = int(ts[i])
        sec, frac = divmod(us, 1_000_000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{frac:06d}Z"
        lev = int(level[i])
        p = _PATHS[path[i]]
        if lev == 2:
            code: Any = _ERRCODES[errcode[i]]
            w = words[i]
            msg = f"{_METHODS[method[i]]} {p}/{item[i]} failed: {_WORDS[w[0]]} {_WORDS[w[1]]} " \
                  f"{_WORDS[w[2]]}"
        else:
            code = int(status[i])
            msg = f"{_METHODS[method[i]]} {p}/{item[i]} {code}"
        rec: dict[str, Any] = {"ts": stamp, "level": lv[lev], "svc": _SVCS[svc[i]],
                               "host": f"node-{int(host[i]):02d}", "msg": msg}
        if not u_missing[i]:
            u: dict[str, Any] = {"name": None if name_null[i] else
                                 f"{_FIRST[first[i]]}{int(uid[i]) % 1000}",
                                 "id": int(uid[i])}
            if not geo_missing[i]:
                c, city = _GEO[geo[i]]
                u["geo"] = {"country": c, "city": city}
            rec["u"] = u
        rec["code"] = code
        rec["dur"] = int(dur[i]) if dur_int[i] else round(float(dur[i]), 3)
        rec["tags"] = [_TAGS[t] for t in tagv[i, :ntags[i]]]
        rec["req"] = {"id": f"{int(req_raw[i]):016x}",
                      "bytes": None if req_null[i] else int(req_bytes[i])}
        tk = trace_kind[i]
        if tk < 0.5:
            rec["trace"] = f"{int(trace_raw[i]):016x}"
        elif tk < 0.6:
            rec["trace"] = None
        out = rec
        yield out


def write_ndjson(path: Path, n: int = ROWS, seed: int = SEED) -> int:
    """Write the records as NDJSON (compact separators, as a logger writes); the size."""
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        buf = []
        for rec in records(n, seed):
            buf.append(dumps(rec))
            if len(buf) >= 8192:
                f.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            f.write("\n".join(buf) + "\n")
    tmp.replace(path)
    return path.stat().st_size


def write_parquet(src: Path, path: Path) -> int:
    """Parquet as polars writes it from the NDJSON (schema inferred from every line: the
    int-or-string ``code`` becomes a string, the int-or-float ``dur`` a float)."""
    import polars as pl

    df = pl.read_ndjson(src, infer_schema_length=None)
    tmp = path.with_suffix(".tmp")
    df.write_parquet(tmp)
    tmp.replace(path)
    return path.stat().st_size


def write_csup(src: Path, path: Path, fuse: bool = True) -> int:
    """CSUP as csup-async's ``write`` makes it from the same records (parsed from the
    NDJSON, so the bytes the writer sees are the file's)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import csup_async

    def rows() -> Iterator[Any]:
        with open(src, encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)

    tmp = path.with_suffix(".tmp")
    csup_async.write(str(tmp), rows(), fuse=fuse, target="csup-async")
    tmp.replace(path)
    return path.stat().st_size


def ensure(root: Path = ROOT, n: int = ROWS, seed: int = SEED, force: bool = False,
           log: bool = False, nofuse: bool = False) -> dict[str, Path]:
    """The three files under ``root`` (generated when missing or ``force``); with
    ``nofuse`` a fourth, ``logs.nofuse.csup``: the records under their exact super
    types (``write(..., fuse=False)``: one per shape, hundreds)."""
    root.mkdir(parents=True, exist_ok=True)
    paths = {"ndjson": root / "logs.ndjson", "parquet": root / "logs.parquet",
             "csup": root / "logs.csup"}
    steps = [("ndjson", lambda: write_ndjson(paths["ndjson"], n, seed)),
             ("parquet", lambda: write_parquet(paths["ndjson"], paths["parquet"])),
             ("csup", lambda: write_csup(paths["ndjson"], paths["csup"]))]
    if nofuse:
        paths["nofuse"] = root / "logs.nofuse.csup"
        steps.append(("nofuse", lambda: write_csup(paths["ndjson"], paths["nofuse"], False)))
    for kind, make in steps:
        if force or not paths[kind].exists():
            t = time.perf_counter()
            size = make()
            if log:
                print(f"{paths[kind]}: {size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s",
                      file=sys.stderr)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--out", type=Path, default=None,
                    help=f"directory (default {ROOT}, or a sibling for other rows/seed)")
    ap.add_argument("--force", action="store_true", help="write the files again")
    ap.add_argument("--no-fuse", action="store_true",
                    help="also write logs.nofuse.csup (write(fuse=False): many super types)")
    args = ap.parse_args(argv)
    out = args.out
    if out is None:
        out = ROOT if (args.rows, args.seed) == (ROWS, SEED) else \
            ROOT.with_name(f"logshape-v1-{args.rows}-{args.seed}")
    for kind, p in ensure(out, args.rows, args.seed, args.force, log=True,
                              nofuse=args.no_fuse).items():
        print(f"{kind}\t{p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
