"""Stores against servers that lie, stall, trickle or redirect.

One small aiohttp server (two listeners, so a redirect can change origin) on
127.0.0.1 misbehaves per object name; HTTPStore, S3Store (path-style, signed)
and, for redirects, GCSStore talk to it.  Each test states what a user would
see: a typed error in bounded time, never a ValueError, a hang or a secret
sent to another origin.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

import csup_async
from bench.net import HOST, LoopThread
from csup_async.model.errors import CsupError, ObjectChangedError, StoreError, StoreTimeoutError
from csup_async.stores import GCSStore, HTTPStore, RetryPolicy, S3Store, Store

SIZE = 50_000
DATA = os.urandom(SIZE)
OTHER = bytes(reversed(DATA))  # a replacement of the same size
QUICK = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.05, total_timeout=5)
SECRET = "secret-do-not-forward"


@dataclass
class State:
    data: bytes = DATA
    etag: str = '"v1"'
    etag_on_ranges: bool = True  # False: only suffix reads (and HEAD) carry the ETag
    seen: list[tuple[int, str, dict[str, str]]] = field(default_factory=list)


class Liar:
    """Two aiohttp listeners (``port``, ``other_port``) that misbehave per object name."""

    def __init__(self) -> None:
        self.state = State()
        self._loop = LoopThread("liar")
        self._runner: Any = None
        self.port = self.other_port = 0

    def start(self) -> Liar:
        from aiohttp import web

        self._loop.start()

        async def boot() -> tuple[int, int]:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
            await runner.setup()
            for _ in range(2):
                await web.TCPSite(runner, HOST, 0).start()
            self._runner = runner
            return int(runner.addresses[0][1]), int(runner.addresses[1][1])

        self.port, self.other_port = self._loop.run(boot())
        return self

    def stop(self) -> None:
        if self._runner is not None:
            self._loop.run(self._runner.cleanup())
        self._loop.stop()

    def url(self, name: str, port: int | None = None) -> str:
        return f"http://{HOST}:{port or self.port}/{name}"

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        port = request.transport.get_extra_info("sockname")[1]
        self.state.seen.append((port, request.path, dict(request.headers)))
        name = request.path.rsplit("/", 1)[-1]
        rng = request.headers.get("Range", "")
        if name == "endless.bin":  # ignores Range, streams a chunked 200 forever
            resp = web.StreamResponse(status=200)
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            block = b"x" * 65536
            with contextlib.suppress(ConnectionError):
                while True:
                    await resp.write(block)
            return resp
        if name == "trickle.bin":  # a well-formed 206 that sends one byte every 0.5 s
            first, _, last = rng.removeprefix("bytes=").partition("-")
            start, end = ((max(0, SIZE - int(last)), SIZE - 1) if not first
                          else (int(first), int(last)))
            resp = web.StreamResponse(status=206, headers={
                "Content-Range": f"bytes {start}-{end}/{SIZE}", "ETag": '"t"'})
            resp.content_length = end - start + 1
            await resp.prepare(request)
            with contextlib.suppress(ConnectionError):  # the client gave up: as it should
                for i in range(start, end + 1):
                    await resp.write(DATA[i:i + 1])
                    await asyncio.sleep(0.5)
            return resp
        if name == "digits.bin":  # a total of 5000 digits
            return web.Response(status=206, body=DATA[:100], headers={
                "Content-Range": f"bytes 0-99/{'9' * 5000}", "ETag": '"d"'})
        if name == "digits-len.bin":  # a 200 whose Content-Length is 5000 digits long
            return web.Response(status=416, headers={"Content-Range": f"bytes */{'9' * 5000}"})
        if name == "redirect.bin":  # to the same path on the other listener
            return web.Response(status=302, headers={
                "Location": self.url("target.bin", self.other_port)})
        if name == "redirect-here.bin":  # same origin
            return web.Response(status=302, headers={"Location": "/bkt/target.bin"})
        return self._serve(request, rng)

    def _serve(self, request: Any, rng: str) -> Any:
        from aiohttp import web

        st = self.state
        data = st.data
        headers = {"Accept-Ranges": "bytes"}
        suffix = rng.startswith("bytes=-")
        if st.etag_on_ranges or suffix or request.method == "HEAD":
            headers["ETag"] = st.etag  # If-Match is ignored, as the proxy in the issue did
        if request.method == "HEAD":
            headers["Content-Length"] = str(len(data))
            return web.Response(status=200, headers=headers)
        if not rng:
            return web.Response(status=200, body=data, headers=headers)
        first, _, last = rng.removeprefix("bytes=").partition("-")
        if not first:
            start, end = max(0, len(data) - int(last)), len(data) - 1
        else:
            start, end = int(first), min(int(last), len(data) - 1)
        headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return web.Response(status=206, body=data[start:end + 1], headers=headers)


@pytest.fixture(scope="module")
def liar_server() -> Iterator[Liar]:
    server = Liar().start()
    yield server
    server.stop()


@pytest.fixture
def liar(liar_server: Liar) -> Liar:
    liar_server.state = State()
    return liar_server


def make(kind: str, liar: Liar, **options: Any) -> tuple[Store, Any]:
    """A store of ``kind`` pointed at the liar, and a function from object name to key."""
    options.setdefault("retry", QUICK)
    if kind == "http":
        return HTTPStore(**options), lambda name: liar.url(f"bkt/{name}")
    store = S3Store(endpoint_url=liar.url("").rstrip("/"), region="us-east-1",
                    access_key_id="AKIDSAFETY", secret_access_key=SECRET, **options)
    return store, lambda name: f"bkt/{name}"


KINDS = ["http", "s3"]


# ------------------------------------------------------ 8: absurd numbers ---
@pytest.mark.parametrize("kind", KINDS)
async def test_a_5000_digit_content_range_is_a_store_error(liar: Liar, kind: str) -> None:
    store, key = make(kind, liar)
    async with store:
        for call in (lambda: store.read_tail(key("digits.bin"), 100),
                     lambda: store.read_range(key("digits.bin"), 0, 100),
                     lambda: store.read_tail(key("digits-len.bin"), 100)):
            with pytest.raises(StoreError) as info:
                await call()
            assert "9" * 100 not in str(info.value)  # and the message stays short


# ------------------------------------------------------ 11: no deadline ---
@pytest.mark.parametrize("kind", KINDS)
async def test_an_endless_body_that_ignores_range_is_not_consumed(liar: Liar, kind: str) -> None:
    """A tail read of a server that ignores Range and streams forever stops at
    max_whole_body (the issue's case: read_timeout=2, total_timeout=5, ran > 30 s)."""
    store, key = make(kind, liar, read_timeout=2,
                      retry=RetryPolicy(total_timeout=5, base_delay=0.01))
    t0 = time.monotonic()
    async with store:
        store.max_whole_body = 4 << 20  # the default (64 MiB) works the same, only slower
        with pytest.raises(StoreError, match="ignored the Range header"):
            await store.read_tail(key("endless.bin"), 1000)
    assert time.monotonic() - t0 < 10


async def test_open_of_an_endless_body_ends(liar: Liar) -> None:
    t0 = time.monotonic()
    with pytest.raises(CsupError):
        async with csup_async.open(liar.url("bkt/endless.bin"), read_timeout=2,
                                   retry=RetryPolicy(total_timeout=5)):
            pass
    assert time.monotonic() - t0 < 20  # 64 MiB over loopback, then refused


@pytest.mark.parametrize("kind", KINDS)
async def test_a_trickling_body_hits_the_timeout(liar: Liar, kind: str) -> None:
    """A 206 that sends a byte every 0.5 s never trips read_timeout (2 s of silence);
    ``timeout=`` ends the whole operation."""
    store, key = make(kind, liar, read_timeout=2, connect_timeout=1, timeout=3)
    t0 = time.monotonic()
    async with store:
        with pytest.raises(StoreTimeoutError, match="3 s timeout"):
            await store.read_range(key("trickle.bin"), 0, 200)
        assert time.monotonic() - t0 < 6
        with pytest.raises(StoreTimeoutError):
            await store.read_tail(key("trickle.bin"), 200)
    assert time.monotonic() - t0 < 12


@pytest.mark.parametrize("kind", KINDS)
async def test_every_request_has_a_deadline_without_timeout(liar: Liar, kind: str) -> None:
    """No ``timeout=``: each request still ends (connect + read timeouts + its size at
    min_throughput), and the retries with it."""
    store, key = make(kind, liar, read_timeout=1, connect_timeout=1, min_throughput=1000)
    t0 = time.monotonic()
    async with store:
        with pytest.raises(StoreTimeoutError, match="deadline"):
            await store.read_range(key("trickle.bin"), 0, 100)  # 2.1 s a try, 2 tries
    assert time.monotonic() - t0 < 8


async def test_the_timeout_also_bounds_a_scan(liar: Liar, tmp_path: Any) -> None:
    t0 = time.monotonic()
    with pytest.raises(StoreTimeoutError):
        await csup_async.open(liar.url("bkt/trickle.bin"), timeout=2, retry=QUICK)
    assert time.monotonic() - t0 < 5


def test_timeout_options_are_checked() -> None:
    for bad in ({"timeout": 0}, {"timeout": -1.0}, {"min_throughput": 0}):
        with pytest.raises(CsupError):
            HTTPStore(**bad)  # type: ignore[arg-type]


# --------------------------------------------- 4: pinning that fails open ---
@pytest.mark.parametrize("kind", KINDS)
async def test_a_response_without_etag_is_checked_before_use(liar: Liar, kind: str) -> None:
    """Ranged responses lose their ETag and If-Match is ignored (a proxy): an
    unchanged object is confirmed by a metadata request, a same-size replacement
    is refused."""
    liar.state.etag_on_ranges = False
    store, key = make(kind, liar)
    async with store:
        tail = await store.read_tail(key("obj.bin"), 100)
        assert tail.info.version == '"v1"'
        assert await store.read_range(key("obj.bin"), 10, 1000, tail.info.version) == \
            DATA[10:1010]
        liar.state.data, liar.state.etag = OTHER, '"v2"'
        with pytest.raises(ObjectChangedError):
            await store.read_range(key("obj.bin"), 10, 1000, tail.info.version)


async def test_a_server_that_never_names_a_version_on_ranges_is_refused(liar: Liar) -> None:
    """When nothing can show a response is the pinned version, the read is refused."""
    from csup_async.stores._ranged import RangedStore

    liar.state.etag_on_ranges = False
    store, key = make("http", liar)
    async with store:
        tail = await store.read_tail(key("obj.bin"), 100)
        liar.state.etag = '"v1"'

        async def nothing(k: str) -> None:
            return None

        store.version_lookup = nothing  # type: ignore[method-assign]  # a store with no lookup
        assert RangedStore.version_lookup is not None
        with pytest.raises(ObjectChangedError, match="did not name its version"):
            await store.read_range(key("obj.bin"), 0, 100, tail.info.version)


# ---------------------------------------------------- 14: secrets in redirects ---
async def test_redirects_to_another_origin_drop_user_headers(liar: Liar) -> None:
    headers = {"Authorization": f"Bearer {SECRET}", "X-Api-Key": SECRET, "Cookie": SECRET}
    async with HTTPStore(headers=headers, retry=QUICK) as store:
        tail = await store.read_tail(liar.url("bkt/redirect.bin"), 100)
        assert tail.data == DATA[-100:]
        moved = [h for port, _, h in liar.state.seen if port == liar.other_port]
        assert moved and all(SECRET not in str(h) for h in moved)
        assert moved[0]["Range"] == "bytes=-100"
        # the same origin keeps them (the headers are for that server)
        liar.state.seen.clear()
        await store.read_tail(liar.url("bkt/redirect-here.bin"), 100)
        assert [h["X-Api-Key"] for _, p, h in liar.state.seen] == [SECRET, SECRET]


async def test_gcs_token_does_not_follow_a_redirect_to_another_origin(liar: Liar) -> None:
    async with GCSStore(endpoint=liar.url("").rstrip("/"), token=SECRET, retry=QUICK) as store:
        with pytest.raises(StoreError):  # the target is not a GCS server: any error is fine
            await store.read_tail("bkt/redirect.bin", 100)
    moved = [h for port, _, h in liar.state.seen if port == liar.other_port]
    first = [h for port, _, h in liar.state.seen if port == liar.port]
    assert first and f"Bearer {SECRET}" in first[0].get("Authorization", "")
    assert moved and all(SECRET not in str(h) for h in moved)


async def test_s3_does_not_follow_redirects(liar: Liar) -> None:
    store, key = make("s3", liar)
    async with store:
        with pytest.raises(StoreError, match="HTTP 302"):
            await store.read_tail(key("redirect.bin"), 100)
    assert all(port == liar.port for port, _, _ in liar.state.seen)


async def test_redirect_loops_and_bad_locations_are_typed() -> None:
    from aiohttp import web

    async def bounce(request: Any) -> Any:
        if request.path == "/ftp":
            return web.Response(status=302, headers={"Location": "ftp://127.0.0.1/x"})
        return web.Response(status=307, headers={"Location": request.path})

    app = web.Application()
    app.router.add_get("/{tail:.*}", bounce)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, HOST, 0).start()
    base = f"http://{HOST}:{runner.addresses[0][1]}"
    try:
        async with HTTPStore(retry=QUICK) as store:
            with pytest.raises(StoreError, match="more than 10 redirects"):
                await store.read_tail(f"{base}/x", 10)
            with pytest.raises(StoreError, match="ftp"):
                await store.read_tail(f"{base}/ftp", 10)
    finally:
        await runner.cleanup()


async def test_fsspec_store_timeout() -> None:
    """The fsspec store takes ``timeout=`` too (a slow sync filesystem is abandoned)."""
    from fsspec.implementations.memory import MemoryFileSystem

    from csup_async.stores import FsspecStore

    class Slow(MemoryFileSystem):
        protocol = "slowmem"

        def cat_file(self, path: str, start: int | None = None, end: int | None = None,
                     **kwargs: Any) -> bytes:
            time.sleep(1.5)
            return super().cat_file(path, start=start, end=end, **kwargs)

    fs = Slow()
    fs.pipe_file("/bkt/slow.bin", DATA)
    store = FsspecStore(fs, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(StoreTimeoutError, match=r"0\.3 s timeout"):
        await store.read_range("/bkt/slow.bin", 0, 10)
    assert time.monotonic() - t0 < 1.2
    assert (await FsspecStore(fs).read_range("/bkt/slow.bin", 0, 10)) == DATA[:10]
    with pytest.raises(CsupError):
        FsspecStore(fs, timeout=0)
    fs.rm_file("/bkt/slow.bin")  # memory filesystems share one namespace
