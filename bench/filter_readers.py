"""The readers the filter benchmark compares, one runner class each: csup-async, polars,
DuckDB (httpfs) and pyarrow.dataset, each turning a case's filter into its own form."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import data
import numpy as np
from filter_cases import (
    key,
)

OPS = {"==": "__eq__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__",
       "!=": "__ne__"}


def csup_features() -> dict[str, bool]:
    """What this tree's csup-async offers, by its signatures (never by version)."""
    from csup_async.readers.reader import Reader

    scan = inspect.signature(Reader.scan).parameters
    return {"filter": "filter" in scan, "rows": "rows" in scan, "limit": "limit" in scan,
            "take": callable(getattr(Reader, "take", None)),
            "plan_filter": "filter" in inspect.signature(Reader.plan).parameters}


def csup_filter(pred: list[list[Any]]) -> Any:
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
                res = await r.scan(cols, filter=csup_filter(case["pred"]))
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
