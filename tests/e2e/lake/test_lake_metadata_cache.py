"""``CSUP_METADATA_CACHE=dir csup-async lake scan ...`` run twice: the second run reads
only what can change (the journals' HEAD, TAIL, snapshot and the entry after HEAD), the
lake's own ``lake.zng`` and journal of pools (names a lake created again at the same URL
reuses) and the data; seek indexes, commits and the pools' journal entries come from the
cache on disk.

Requests are counted at the server: the lake sits on the aiohttp range server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import csup_async
from bench.lake_builder import LakeBuilder, ksuid_str, rec
from csup_async.lake.lake import open_lake
from csup_async.stores.diskcache import DiskMetadataCache

ROOT = Path(__file__).resolve().parents[3]
ROW = rec(("ts", "int64"), ("msg", "string"))


class Served(LakeBuilder):
    """A test lake and the prefix the range server holds a copy of it under (the server
    outlives the test: each lake has a prefix of its own)."""

    prefix = ""


@pytest.fixture
def lake(range_server: Any, tmp_path: Path) -> tuple[Served, str, Any]:
    b = Served(tmp_path / "lake")
    p = b.create_pool("logs", stride=64)
    for k in range(3):
        b.load(p, "main", [{"ts": k * 1000 + i, "msg": f"m{k}-{i}"} for i in range(200)], ROW)
    b.create_pool("other", key="k", order="desc")
    b.prefix = f"lakecache-{ksuid_str(p.id)}"
    b.upload(range_server.put, b.prefix)
    range_server.reset()
    return b, range_server.url(b.prefix), p


def _cli(args: list[str], cache: Path | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CSUP_METADATA_CACHE", None)
    if cache is not None:
        env["CSUP_METADATA_CACHE"] = str(cache)
    return subprocess.run([sys.executable, "-m", "csup_async.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def _kind(name: str, b: Served) -> str:
    """What a request asked for, from the lake's layout (Zed's names)."""
    rel = name[len(b.prefix) + 1:]
    base = rel.rsplit("/", 1)[-1]
    if base in ("HEAD", "TAIL", "snap.zng"):
        return "fresh"
    if rel.endswith("-seek.zng"):
        return "seek"
    if "/data/" in rel:
        return "data"
    if "/commits/" in rel:
        return "commit"
    if rel == "lake.zng" or rel.startswith("pools/"):
        return "lake"  # names a lake created again at this URL would reuse: never kept
    d = rel.rsplit("/", 1)[0]
    if base[:-4].isdigit() and int(base[:-4]) == b.head(d) + 1:
        return "probe"  # the entry after HEAD, absent: how a replay finds the real end
    return "entry"


def _requests(server: Any, b: Served) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in server.seen(kind=None):
        out.setdefault(_kind(s.name, b), []).append(s.name)
    return {k: sorted(v) for k, v in out.items()}


SCAN = ["lake", "scan", "--pool", "logs", "-c", "ts,msg", "--where", "ts >= 1100",
        "--where", "ts < 2150"]


def _scan(url: str) -> list[str]:
    return [*SCAN[:2], url, *SCAN[2:]]


def test_a_second_lake_scan_reads_only_the_journal_heads_and_the_data(
        lake: Any, range_server: Any, tmp_path: Path) -> None:
    b, url, _ = lake
    cache = tmp_path / "cache"
    first = _cli(_scan(url), cache)
    assert first.returncode == 0, first.stderr
    rows = [json.loads(x) for x in first.stdout.splitlines()]
    assert [r["ts"] for r in rows] == [*range(1100, 1200), *range(2000, 2150)]
    cold = _requests(range_server, b)
    assert cold["seek"] and cold["entry"] and cold["commit"] and cold["data"]
    assert list(cache.glob("*.csupobj"))
    range_server.reset()
    second = _cli(_scan(url), cache)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    warm = _requests(range_server, b)
    assert set(warm) == {"fresh", "probe", "lake", "data"}, warm
    assert warm["fresh"] == cold["fresh"] and warm["probe"] == cold["probe"]
    assert warm["data"] == cold["data"]


def test_without_the_cache_every_lake_scan_reads_the_same(
        lake: Any, range_server: Any, tmp_path: Path) -> None:
    b, url, _ = lake
    runs = []
    for _ in range(2):
        range_server.reset()
        out = _cli(_scan(url), None)
        assert out.returncode == 0, out.stderr
        runs.append(_requests(range_server, b))
    assert runs[0] == runs[1]
    assert runs[0]["seek"] and runs[0]["entry"] and runs[0]["commit"]
    # and the cache's first run asks exactly what a run without it asks
    range_server.reset()
    assert _cli(_scan(url), tmp_path / "cache").returncode == 0
    assert _requests(range_server, b) == runs[0]


def test_a_new_commit_is_seen_through_a_warm_cache(
        lake: Any, range_server: Any, tmp_path: Path) -> None:
    """HEAD is read fresh: a load by another process after the cache was filled shows."""
    b, url, logs = lake
    cache = tmp_path / "cache"
    assert _cli(_scan(url), cache).returncode == 0
    b.create_pool("late")  # (a new pool and a new commit on logs, written after)
    b.load(logs, "main", [{"ts": 1500, "msg": "new"}], ROW)
    b.upload(range_server.put, b.prefix)
    out = _cli(_scan(url), cache)
    assert out.returncode == 0, out.stderr
    assert {"ts": 1500, "msg": "new"} in [json.loads(x) for x in out.stdout.splitlines()]
    ls = _cli(["lake", "ls", url], cache)
    assert [ln.split()[0] for ln in ls.stdout.splitlines()] == ["late", "logs", "other"]


def test_open_lake_takes_a_metadata_cache_and_false_turns_the_env_var_off(
        lake: Any, range_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    b, url, _ = lake
    cache = tmp_path / "cache"

    async def scan(**opts: Any) -> tuple[list[Any], dict[str, list[str]]]:
        range_server.reset()
        async with open_lake(url, **opts) as lk:
            res = await (await lk.pool("logs")).scan(["ts"], filter="ts >= 1100 and ts < 1110")
        return res.to_pylist(), _requests(range_server, b)

    rows, cold = asyncio.run(scan(metadata_cache=cache))
    assert rows == [{"ts": t} for t in range(1100, 1110)]
    # another cache object on the directory: what a second process finds
    again, warm = asyncio.run(scan(metadata_cache=DiskMetadataCache(cache)))
    assert again == rows and set(warm) == {"fresh", "probe", "lake", "data"}, warm
    monkeypatch.setenv("CSUP_METADATA_CACHE", str(cache))
    _, off = asyncio.run(scan(metadata_cache=False))
    assert off == cold
    with pytest.raises(csup_async.CsupError, match="metadata_cache"):
        asyncio.run(scan(metadata_cache=str(cache)))


def test_a_damaged_cache_file_is_a_miss_and_the_rows_stay_right(
        lake: Any, range_server: Any, tmp_path: Path) -> None:
    b, url, _ = lake
    cache = tmp_path / "cache"
    first = _cli(_scan(url), cache)
    files = sorted(cache.glob("*.csupobj"))
    assert first.returncode == 0 and files
    for f in files:
        raw = f.read_bytes()
        f.write_bytes(raw[:-1] + bytes([raw[-1] ^ 0xFF]))  # one flipped byte each
    range_server.reset()
    second = _cli(_scan(url), cache)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert _requests(range_server, b)["seek"]  # read again from the store
    assert len(list(cache.glob("*.csupobj"))) == len(files)  # and kept again


def test_a_store_passed_by_hand_keeps_nothing_on_disk(lake: Any, tmp_path: Path) -> None:
    """Its scope is this process's (another process's store may hold other credentials)."""
    _, url, _ = lake
    cache = tmp_path / "cache"

    async def go() -> None:
        from csup_async.stores import store_for

        store, _ = store_for(url)
        try:
            async with open_lake(url, store=store, metadata_cache=cache) as lk:
                await (await lk.pool("logs")).scan(["ts"])
        finally:
            await store.close()

    asyncio.run(go())
    assert not list(cache.glob("*.csupobj"))
