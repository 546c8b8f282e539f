"""Every rendering of a URL goes through the one redaction: a signed URL's secrets are
planted in several objects read as one dataset, and looked for in the explain of Reader
and Dataset plans (their task and pruned-file lists), reprs, error messages, logs, the
CLI's stdout and stderr, and Spark's partition descriptions and plan report."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import traceback
from typing import Any

import pytest

import csup_async
from csup_async import CsupError, col
from csup_async.cli import main
from tests.support.servers import RangeServer

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


SIG = "Sig0123456789abcdefSECRET"
CRED = "AKIAQUERYSECRET"
QUERY = (f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={CRED}%2F20260101%2Fus-east-1"
         f"%2Fs3%2Faws4_request&X-Amz-Signature={SIG}&token=tok-SECRET-42")
USERINFO = "alice:pw-SECRET-77"
SECRETS = [SIG, CRED, "tok-SECRET-42", "pw-SECRET-77", "SECRET"]


def _csup(lo: int) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": i, "name": f"n{i}"} for i in range(lo, lo + 200)])
    return out.getvalue()


def _signed(rs: RangeServer, name: str) -> str:
    host = rs.endpoint.replace("http://", f"http://{USERINFO}@")
    return f"{host}/{name}{QUERY}"


def _texts_of_error(e: BaseException) -> str:
    return "\n".join([str(e), repr(e), *traceback.format_exception(e)])


async def _library_texts(urls: list[str], missing: str) -> list[tuple[str, str]]:
    texts: list[tuple[str, str]] = []
    async with csup_async.open(urls[0]) as r:
        plan = await r.plan(["id"], filter=col("id") >= 100)
        res = await r.scan(["id"])
        texts += [("reader repr", repr(r)), ("reader plan explain", plan.explain()),
                  ("reader plan repr", repr(plan)), ("reader result", repr(res))]
    async with csup_async.open_dataset(urls) as ds:
        plan = await ds.plan(["id", "name"], filter=col("id") >= 1000)  # prunes the first
        texts += [("dataset repr", repr(ds)), ("dataset plan explain", plan.explain()),
                  ("dataset plan repr", repr(plan)), ("dataset plan str", str(plan))]
        assert plan.pruned, "the filter rules the first object out"
        texts += [("dataset pruned", repr(plan.pruned)), ("dataset tasks", repr(plan.tasks))]
        res = await ds.scan(["id"], filter=col("id") >= 1000)
        texts += [("dataset result", repr(res)), ("dataset stats", str(res.stats))]
        for what, coro in (("missing column", ds.scan(["nope"])),
                           ("bad filter", ds.scan(["id"], filter=col("name") > 3))):
            try:
                await coro
                raise AssertionError(f"{what} did not fail")
            except CsupError as e:
                texts.append((f"dataset error: {what}", _texts_of_error(e)))
    try:
        async with csup_async.open_dataset([*urls, missing]) as ds:
            await ds.scan(["id"])
        raise AssertionError("a missing object did not fail")
    except CsupError as e:
        texts.append(("dataset error: missing object", _texts_of_error(e)))
    return texts


def test_no_rendering_shows_a_signed_urls_secrets(range_server: RangeServer,
                                                  capfd: pytest.CaptureFixture[str],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, ours and the libraries'
    names = [range_server.put(f"red/p{k}.csup", _csup(k * 1000)) for k in range(3)]
    urls = [_signed(range_server, n) for n in names]
    missing = _signed(range_server, "red/absent.csup")
    texts = asyncio.run(_library_texts(urls, missing))

    for cmd in (["scan", *urls, "--format", "json", "--stats", "--explain",
                 "--where", "id >= 1000"],
                ["plan", *urls, "-c", "id", "--where", "id >= 1000"],
                ["inspect", *urls],
                ["--debug", "scan", *urls, missing, "--format", "json"],
                ["--debug", "scan", *urls, "-c", "nope", "--format", "json"],
                ["scan", *urls, "--where", "name > 3"]):
        code = main(cmd)
        out = capfd.readouterr()
        texts += [(f"cli {cmd[:2]} exit {code} stdout", out.out),
                  (f"cli {cmd[:2]} exit {code} stderr", out.err)]

    texts += _spark_texts(urls)
    texts += [(f"log {r.name}", r.getMessage()) for r in caplog.records]
    for where, text in texts:
        found = [s for s in SECRETS if s in text]
        assert not found, f"{where} shows {found}:\n{text[:3000]}"
    joined = "\n".join(t for _, t in texts)
    assert "p0.csup" in joined and "p2.csup" in joined  # objects are still named


def _spark_texts(urls: list[str]) -> list[tuple[str, str]]:
    pytest.importorskip("pyspark")
    from csup_async.spark.source import CsupDataSource

    ds = CsupDataSource({"paths": json.dumps(urls)})
    reader: Any = ds.reader(ds.schema())
    parts = reader.partitions()
    assert parts
    texts = [("spark partition", "\n".join(f"{p!r} {p!s}" for p in parts)),
             ("spark files", "\n".join(repr(getattr(p, "files", "")) for p in parts)),
             ("spark reader", repr(reader)),
             ("spark report", json.dumps(reader.read_plan().report, default=str))]
    return texts
