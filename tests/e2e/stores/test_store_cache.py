"""Stores shared without asking, and the metadata cache.

Requests are counted at the server (the aiohttp range server logs what it
received); process-wide behaviour (closing at the end of ``asyncio.run`` and at
exit, which modules a scan imports) is checked in a fresh subprocess.
"""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async import CsupError, MetadataCache, ObjectChangedError
from csup_async.stores import HTTPStore, shared
from tests.support.paths import ROOT
from tests.support.servers import MotoS3, RangeServer

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _csup(n: int, seed: int = 0) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": i + seed, "name": f"n{(i + seed) % 97}"} for i in range(n)],
                     target="csup-async")  # at import: no fixture yet
    return out.getvalue()


def _big(seed: int) -> bytes:
    """A file of about 2.7 MB: larger than any profile's tail read."""
    rnd = __import__("random").Random(seed)
    out = io.BytesIO()
    csup_async.write(out, [{"id": i, "blob": rnd.randbytes(64).hex()} for i in range(20000)])
    return out.getvalue()


DATA = _csup(3000)
OTHER = _csup(3000, seed=7)  # another version of the same object


async def _ids(url: str, **opts: Any) -> list[int]:
    async with csup_async.open(url, **opts) as r:
        return (await r.scan(["id"])).column("id").to_pylist()


# ------------------------------------------------------------ shared stores ---
async def test_open_shares_one_store_per_loop_and_options(range_server: RangeServer) -> None:
    range_server.put("s/a.csup", DATA)
    url = range_server.url("s/a.csup")
    try:
        async with csup_async.open(url) as r1, csup_async.open(url) as r2:
            assert r1.store is r2.store
            store = r1.store
        assert isinstance(store, HTTPStore)
        assert store.connector is not None  # the readers did not close what they share
        async with csup_async.open(url, read_timeout=7) as r3:
            assert r3.store is not store and r3.store.read_timeout == 7
        async with csup_async.open(url, headers={"X-A": "1"}) as r4, \
                csup_async.open(url, headers={"X-A": "1"}) as r5:
            assert r4.store is r5.store is not store
        assert (await _ids(url)) == list(range(3000))
    finally:
        await csup_async.close_stores()
    assert store.connector is None  # close_stores closed it
    async with csup_async.open(url) as r6:  # and a new one is made on demand
        assert r6.store is not store
    await csup_async.close_stores()


async def test_a_store_passed_by_hand_is_the_callers(range_server: RangeServer) -> None:
    range_server.put("s/b.csup", DATA)
    async with HTTPStore() as store:
        async with csup_async.open(range_server.url("s/b.csup"), store=store) as r:
            assert r.store is store
        assert store.connector is not None  # still open: not the reader's to close


async def test_stores_that_cannot_be_shared_are_owned_by_their_reader(
        range_server: RangeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    range_server.put("s/c.csup", DATA)
    monkeypatch.setattr(shared, "MAX_SHARED", 0)  # as if the loop had too many option sets
    async with csup_async.open(range_server.url("s/c.csup")) as r:
        store = r.store
        await r.scan(["id"])
        assert store.connector is not None
    assert store.connector is None  # the reader made it alone, so it closed it


def test_option_values_freeze_order_independently() -> None:
    a = shared.freeze({"headers": {"a": "1", "b": "2"}, "limit": 3})
    b = shared.freeze({"limit": 3, "headers": {"b": "2", "a": "1"}})
    assert a == b and hash(a) == hash(b)
    assert shared.freeze({"x": 1}) != shared.freeze({"x": "1"})
    with pytest.raises(TypeError):
        shared.freeze({"x": bytearray(b"unhashable")})


def _run(script: str, *args: str,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-X", "dev", "-c", textwrap.dedent(script), *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, **(env or {})})


def test_loops_end_and_exit_close_shared_stores_quietly(range_server: RangeServer,
                                                         tmp_path: Path) -> None:
    """asyncio.run closes its loop's shared stores; a loop closed by hand, or still open
    at exit, gives no "Unclosed client session" either.  HTTP and local scans never
    import botocore."""
    range_server.put("s/d.csup", DATA)
    local = tmp_path / "d.csup"
    local.write_bytes(DATA)
    proc = _run("""
        import asyncio, gc, sys
        import csup_async
        from csup_async.stores import shared

        async def scan(url):
            async with csup_async.open(url) as r:
                assert len(await r.scan(["id", "name"])) == 3000
                return r.store

        for url in sys.argv[1:]:
            for _ in range(2):
                store = asyncio.run(scan(url))
                assert getattr(store, "connector", None) is None, "left open by asyncio.run"
        loop = asyncio.new_event_loop()  # closed without shutdown_asyncgens
        loop.run_until_complete(scan(sys.argv[1]))
        loop.close()
        kept = asyncio.new_event_loop()  # still open at exit
        kept.run_until_complete(scan(sys.argv[1]))
        gc.collect()
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("botocore", "aiobotocore")))
        """, range_server.url("s/d.csup"), str(local))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert "Unclosed" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_s3_reads_build_no_client(moto_s3: MotoS3) -> None:
    """Explicit keys and a region: signed requests only, aiobotocore is never imported,
    nor botocore's session, client or service models."""
    key = moto_s3.put("cache/e.csup", DATA)
    opts = moto_s3.store_options()
    proc = _run("""
        import asyncio, sys, json
        import csup_async

        async def main():
            async with csup_async.open(sys.argv[1], **json.loads(sys.argv[2])) as r:
                assert (await r.scan(["id"])).column("id").to_pylist() == list(range(3000))

        asyncio.run(main())
        print(sorted(m for m in sys.modules if m.startswith(("aiobotocore", "botocore.session",
                                                              "botocore.client",
                                                              "botocore.loaders"))))
        """, f"s3://{key}", __import__("json").dumps(opts))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert "Unclosed" not in proc.stderr, proc.stderr


# ----------------------------------------------------------- metadata cache ---
async def test_metadata_cache_skips_the_parse_of_a_known_version(
        range_server: RangeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import csup_async.readers.loading as loading_mod

    parses = []
    real = loading_mod.parse_reassembly
    monkeypatch.setattr(loading_mod, "parse_reassembly",
                        lambda *a, **k: parses.append(1) or real(*a, **k))
    range_server.put("m/a.csup", DATA)
    url = range_server.url("m/a.csup")
    cache = MetadataCache()
    try:
        assert await _ids(url, metadata_cache=cache) == list(range(3000))
        assert await _ids(url, metadata_cache=cache) == list(range(3000))
        assert len(parses) == 1 and cache.hits == 1
        assert len(range_server.seen("m/a.csup")) == 2  # one tail read per open, no more
        # a new version of the object is a miss: parsed again, its own rows
        range_server.put("m/a.csup", OTHER)
        assert await _ids(url, metadata_cache=cache) == list(range(7, 3007))
        assert len(parses) == 2 and len(cache) == 1  # the old version was replaced
    finally:
        await csup_async.close_stores()


async def test_a_repeated_projection_is_planned_once_per_metadata(
        range_server: RangeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-lived reader, or open() per request with the metadata cache, plans the same
    projection once (plans are a pure function of the metadata): the plan run is the
    one a fresh planner makes, and another projection or another version plans anew."""
    import csup_async.readers.planning as planning_mod

    plans: list[tuple[str, ...]] = []
    real = planning_mod.P.plan_scan

    def counted(meta: Any, columns: Any, *a: Any, **k: Any) -> Any:
        plans.append(tuple(columns or ()))
        return real(meta, columns, *a, **k)

    monkeypatch.setattr(planning_mod.P, "plan_scan", counted)
    range_server.put("m/p.csup", DATA)
    url = range_server.url("m/p.csup")
    cache = MetadataCache()
    try:
        async with csup_async.open(url) as r:
            first = await r.scan(["id"])
            again = await r.scan(["id"])
            assert again.plan.plan == first.plan.plan  # the one made for the first scan
            assert again.column("id").to_pylist() == list(range(3000))
            assert (await r.scan(["name"])).column("name").to_pylist()[:2] == ["n0", "n1"]
            fresh = real(r.meta, ["id"], r.profile, available=r.held_span(),
                         warm=r.store.warm_connections())
            assert first.plan.plan == fresh
        assert plans == [("id",), ("name",)]
        plans.clear()
        for _ in range(3):
            assert await _ids(url, metadata_cache=cache) == list(range(3000))
        assert plans == [("id",)] and cache.hits == 2
        range_server.put("m/p.csup", OTHER)  # a new version: new metadata, planned anew
        assert await _ids(url, metadata_cache=cache) == list(range(7, 3007))
        assert plans == [("id",), ("id",)]
    finally:
        await csup_async.close_stores()


async def test_immutable_skips_the_tail_read_and_stays_pinned(range_server: RangeServer) -> None:
    range_server.put("m/b.csup", DATA)
    url = range_server.url("m/b.csup")
    cache = MetadataCache()
    try:
        assert await _ids(url, metadata_cache=cache, immutable=True) == list(range(3000))
        assert len(range_server.seen("m/b.csup")) == 1
        async with csup_async.open(url, metadata_cache=cache, immutable=True) as r:
            assert r.open_stats.requests == 0
            assert len(range_server.seen("m/b.csup")) == 1  # no request to open it
            assert r.num_rows == 3000
        # the promise broken: an object (larger than its tail read) replaced in place
        # is refused, never mixed with the metadata of the version seen before
        range_server.put("m/c.csup", _big(0))
        url_c = range_server.url("m/c.csup")
        assert len(await _ids(url_c, metadata_cache=cache, immutable=True)) == 20000
        range_server.put("m/c.csup", _big(1))
        with pytest.raises(ObjectChangedError):
            await _ids(url_c, metadata_cache=cache, immutable=True)
    finally:
        await csup_async.close_stores()


async def test_metadata_cache_is_bounded_in_bytes(tmp_path: Path) -> None:
    paths = []
    for i in range(6):
        p = tmp_path / f"f{i}.csup"
        p.write_bytes(_csup(500, seed=i))
        paths.append(str(p))
    probe = MetadataCache()
    await _ids(paths[0], metadata_cache=probe)
    one = probe.nbytes
    cache = MetadataCache(max_bytes=3 * one + one // 2)
    for p in paths:
        await _ids(p, metadata_cache=cache)
    assert len(cache) == 3 and cache.nbytes <= cache.max_bytes
    await _ids(paths[3], metadata_cache=cache)  # among the 3 most recent: a hit
    assert cache.hits == 1
    await _ids(paths[0], metadata_cache=cache)  # evicted long ago: a miss
    assert cache.hits == 1 and len(cache) == 3
    assert MetadataCache(max_bytes=0).max_bytes == 0
    with pytest.raises(CsupError):
        MetadataCache(max_bytes=-1)


async def test_immutable_needs_a_cache(tmp_path: Path) -> None:
    p = tmp_path / "x.csup"
    p.write_bytes(DATA)
    with pytest.raises(CsupError, match="metadata_cache"):
        await _ids(str(p), immutable=True)
    with pytest.raises(CsupError, match="MetadataCache"):
        await _ids(str(p), metadata_cache=3)  # a str is a directory, as a Path is
    assert await _ids(str(p), metadata_cache=True) == list(range(3000))  # the default one


def test_close_stores_is_exported() -> None:
    assert asyncio.iscoroutinefunction(csup_async.close_stores)


async def test_cache_entries_are_not_shared_between_credentials(
        range_server: RangeServer) -> None:
    """With immutable=True a hit costs no request, so a store with other credentials must
    not be served what another store read: each asks the server itself."""
    range_server.put("m/d.csup", DATA)
    url = range_server.url("m/d.csup")
    cache = MetadataCache()
    try:
        for token in ("alice", "bob"):
            assert await _ids(url, metadata_cache=cache, immutable=True,
                              headers={"Authorization": f"Bearer {token}"}) == list(range(3000))
        seen = [s.headers.get("Authorization") for s in range_server.seen("m/d.csup")]
        assert seen == ["Bearer alice", "Bearer bob"]
        # the same credentials again (the shared store, or a new loop's store with the
        # same options) hit the cache: no request
        await _ids(url, metadata_cache=cache, immutable=True,
                   headers={"Authorization": "Bearer alice"})
        assert len(range_server.seen("m/d.csup")) == 2
        # a store passed by hand has a scope of its own
        async with HTTPStore(headers={"Authorization": "Bearer alice"}) as store:
            assert await _ids(url, store=store, metadata_cache=cache,
                              immutable=True) == list(range(3000))
        assert len(range_server.seen("m/d.csup")) == 3
    finally:
        await csup_async.close_stores()
