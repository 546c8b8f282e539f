"""``csup-async demo``: the whole product on an embedded default, in one command.

It makes a sample dataset, starts moto's S3 server on 127.0.0.1 (a real S3
protocol endpoint, nothing leaves the machine), uploads the data as CSUP, and
runs a planned projection scan against it: the plan's explanation, the first
rows and the scan's stats (requests, bytes read versus needed, time).
"""

from __future__ import annotations

import asyncio
import io
import logging
import sys
from typing import Any, TextIO

import numpy as np

import csup_async

BUCKET = "csup-demo"
KEY = "events/2026-11-22.csup"
COLUMNS = ["user.name", "amount"]


def sample_rows(n: int = 200_000, seed: int = 42) -> list[dict[str, Any]]:
    """Events with nested users, nulls and a few differently-shaped rows."""
    rng = np.random.default_rng(seed)
    names = [f"user-{i:04d}" for i in range(500)]
    kinds = ["view", "click", "buy"]
    ts0 = np.datetime64("2026-11-22T00:00:00", "ns")
    rows: list[dict[str, Any]] = []
    for i in range(n):
        amount = float(round(rng.random() * 100, 2)) if i % 4 == 3 else None
        rows.append({
            "id": i,
            "ts": ts0 + np.timedelta64(int(i) * 1_000_000_000, "ns"),
            "kind": kinds[i % 3],
            "user": {"name": names[int(rng.integers(0, 500))], "age": int(rng.integers(18, 90))},
            "amount": amount,
            "tags": [kinds[j % 3] for j in range(i % 3)],
        })
    return rows


def _start_s3() -> tuple[Any, str, dict[str, Any]]:
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError:
        raise SystemExit("the demo needs moto's S3 server: "
                         "pip install 'csup-async[demo]'") from None

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    opts = {"endpoint_url": endpoint, "region": "us-east-1",
            "access_key_id": "demo-key", "secret_access_key": "demo-secret"}
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="demo-key", aws_secret_access_key="demo-secret")
    client.create_bucket(Bucket=BUCKET)
    return (server, client), endpoint, opts


async def _scan(url: str, opts: dict[str, Any], out: TextIO) -> None:
    from csup_async.arrays.jsonout import dumps

    async with csup_async.open(url, **opts) as reader:
        rows = await reader.count_rows()
        print(f"opened {url}: {rows:,} rows, "
              f"{len(reader.meta.super_types)} super type(s), metadata in "
              f"{reader.open_stats.requests} request(s)\n", file=out)
        plan = await reader.plan(COLUMNS)
        print(plan.explain(), file=out)
        result = await reader.scan(COLUMNS)
    print("\nfirst rows:", file=out)
    for row in result.to_pylist()[:5]:
        print("  " + dumps(row), file=out)
    amounts = result.column("amount").to_numpy()
    print(f"\nsum(amount) over {len(result):,} rows: {float(np.ma.sum(amounts)):,.2f}", file=out)
    print(f"scan: {result.stats}", file=out)


def run(rows: int = 100_000, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout  # the stream now, not at import
    print(f"making {rows:,} sample events ...", file=out)
    buf = io.BytesIO()
    # this library's own layout: the demo shows its scan plan (per-segment requests)
    csup_async.write(buf, sample_rows(rows), target="csup-async")
    (server, client), endpoint, opts = _start_s3()
    try:
        client.put_object(Bucket=BUCKET, Key=KEY, Body=buf.getvalue())
        print(f"uploaded {len(buf.getvalue()):,} bytes of CSUP to moto's S3 at {endpoint}\n",
              file=out)
        asyncio.run(_scan(f"s3://{BUCKET}/{KEY}", opts, out))
    finally:
        server.stop()
    return 0
