"""The readers compared: csup-async and its peers, each reading through the simulated S3.

Every reader gets the same projection of the same data, through the same
endpoint, with each peer's documented way of reading S3 and its defaults,
except where a default would measure something else than a cold read:
DuckDB's in-memory external file cache is switched off (it would serve
repeated runs from memory) and DuckDB gets 16 threads, its own advice for
remote reads; pyarrow-over-s3fs gets a fresh filesystem per run (s3fs caches
instances).  Each function returns ``(rows, columns)`` of what it read, so
the harness can check that every reader returned the whole answer.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

BUCKET = "bench"
KEY_ID = "bench-access-key"
SECRET = "bench-secret-key"
REGION = "us-east-1"

ReadFn = Callable[[str, list[str], list[str]], tuple[int, int]]
"""``fn(endpoint, keys, columns) -> (rows, columns)``; one key for the wide table."""


# ------------------------------------------------------------ csup-async ---

def _csup_opts(endpoint: str) -> dict[str, Any]:
    return {"endpoint_url": endpoint, "region": REGION, "access_key_id": KEY_ID,
            "secret_access_key": SECRET}


_LOOP: asyncio.AbstractEventLoop | None = None
_STORES: dict[str, Any] = {}


def csup_async_reader(endpoint: str, keys: list[str], columns: list[str]) -> tuple[int, int]:
    """One open + scan + to_arrow per call, through one S3Store per endpoint kept for the
    worker's life (as a service would, and as DuckDB keeps its connection): a fresh
    store's aiobotocore client costs 0.15-0.5 s to build, measured separately."""
    import csup_async
    from csup_async.stores import S3Store

    global _LOOP
    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()

    async def one() -> tuple[int, int]:
        store = _STORES.get(endpoint)
        if store is None:
            store = _STORES[endpoint] = S3Store(**_csup_opts(endpoint))
        if len(keys) == 1:
            async with csup_async.open(f"s3://{BUCKET}/{keys[0]}", store=store) as r:
                res = await r.scan(columns)
        else:
            urls = [f"s3://{BUCKET}/{k}" for k in keys]
            async with csup_async.open_dataset(urls, store=store) as ds:
                res = await ds.scan(columns)
        table = res.to_arrow()
        return table.num_rows, table.num_columns

    return _LOOP.run_until_complete(one())


def csup_async_numpy(endpoint: str, keys: list[str], columns: list[str]) -> tuple[int, int]:
    """csup-async on its numpy decoders (``CSUP_ASYNC_NATIVE=0``): what an install on a
    machine without a C compiler gets."""
    os.environ["CSUP_ASYNC_NATIVE"] = "0"
    return csup_async_reader(endpoint, keys, columns)


# ---------------------------------------------------------------- polars ---

def polars_reader(endpoint: str, keys: list[str], columns: list[str]) -> tuple[int, int]:
    import polars as pl

    opts = {"aws_endpoint_url": endpoint, "aws_access_key_id": KEY_ID,
            "aws_secret_access_key": SECRET, "aws_region": REGION, "aws_allow_http": "true"}
    urls = [f"s3://{BUCKET}/{k}" for k in keys]
    df = pl.scan_parquet(urls if len(urls) > 1 else urls[0], storage_options=opts).select(
        columns).collect()
    return df.height, df.width


# ------------------------------------------------------- pyarrow native ---

def pyarrow_s3(endpoint: str, keys: list[str], columns: list[str]) -> tuple[int, int]:
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    host = endpoint.split("://", 1)[1]
    fs = pafs.S3FileSystem(access_key=KEY_ID, secret_key=SECRET, region=REGION,
                           endpoint_override=host, scheme="http")
    paths = [f"{BUCKET}/{k}" for k in keys]
    t = pq.read_table(paths if len(paths) > 1 else paths[0], columns=columns, filesystem=fs)
    return t.num_rows, t.num_columns


# ------------------------------------------------------------ over s3fs ---

def pyarrow_s3fs(endpoint: str, keys: list[str], columns: list[str]) -> tuple[int, int]:
    import pyarrow.parquet as pq
    import s3fs

    fs = s3fs.S3FileSystem(key=KEY_ID, secret=SECRET, skip_instance_cache=True,
                           client_kwargs={"endpoint_url": endpoint, "region_name": REGION})
    paths = [f"{BUCKET}/{k}" for k in keys]
    t = pq.read_table(paths if len(paths) > 1 else paths[0], columns=columns, filesystem=fs)
    return t.num_rows, t.num_columns


# ---------------------------------------------------------------- duckdb ---

_DUCK: dict[str, Any] = {}


def _httpfs_path() -> str:
    import duckdb_extension_httpfs

    base = Path(duckdb_extension_httpfs.__file__).parent
    found = sorted(base.rglob("*.duckdb_extension"))
    if not found:
        raise RuntimeError("duckdb-extension-httpfs holds no .duckdb_extension file")
    return str(found[0])


def duckdb_reader(endpoint: str, keys: list[str], columns: list[str]) -> tuple[int, int]:
    import duckdb

    con = _DUCK.get(endpoint)
    if con is None:
        con = duckdb.connect()
        con.execute(f"LOAD '{_httpfs_path()}'")
        host = endpoint.split("://", 1)[1]
        for stmt in (f"SET s3_endpoint='{host}'", "SET s3_url_style='path'",
                     "SET s3_use_ssl=false", f"SET s3_region='{REGION}'",
                     f"SET s3_access_key_id='{KEY_ID}'", f"SET s3_secret_access_key='{SECRET}'",
                     "SET threads=16", "SET enable_external_file_cache=false",
                     "SET enable_http_metadata_cache=false"):
            con.execute(stmt)
        _DUCK[endpoint] = con
    urls = ", ".join(f"'s3://{BUCKET}/{k}'" for k in keys)
    cols = ", ".join(f'"{c}"' for c in columns)
    t = con.execute(f"SELECT {cols} FROM read_parquet([{urls}])").fetch_arrow_table()
    return t.num_rows, t.num_columns


# ---------------------------------------------------------------- vortex ---

_VX_STORES: dict[str, Any] = {}


def vortex_reader(endpoint: str, keys: list[str], columns: list[str]) -> tuple[int, int]:
    """Through an explicit store per endpoint: vortex caches the store an ``s3://`` URL
    resolves to (the first endpoint seen in the process), so environment variables
    would silently send later profiles to the first one."""
    import pyarrow as pa
    import vortex
    import vortex.store as vs

    store = _VX_STORES.get(endpoint)
    if store is None:
        store = _VX_STORES[endpoint] = vs.S3Store(
            BUCKET, endpoint=endpoint, access_key_id=KEY_ID, secret_access_key=SECRET,
            region=REGION, client_options={"allow_http": True})

    def one(key: str) -> Any:
        return vortex.open(key, store=store).to_arrow(projection=columns).read_all()

    if len(keys) == 1:
        t = one(keys[0])
    else:
        with ThreadPoolExecutor(16) as pool:
            t = pa.concat_tables(list(pool.map(one, keys)))
    return t.num_rows, t.num_columns


READERS: dict[str, tuple[str, ReadFn]] = {
    "csup-async": ("csup", csup_async_reader),
    "csup-async (numpy only)": ("csup", csup_async_numpy),
    "polars": ("parquet", polars_reader),
    "pyarrow S3FileSystem": ("parquet", pyarrow_s3),
    "duckdb httpfs": ("parquet", duckdb_reader),
    "vortex": ("vortex", vortex_reader),
    "pyarrow + s3fs": ("parquet", pyarrow_s3fs),
}
PEERS = [n for n in READERS if not n.startswith("csup")]
# the numpy-only variant (no compiled decoders: CSUP_ASYNC_NATIVE=0) is in the default
# set: it is what an install on a machine without a C compiler gives
DEFAULT = list(READERS)
