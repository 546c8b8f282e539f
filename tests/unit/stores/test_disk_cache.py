"""The on-disk metadata cache, seen from a second process against the range server."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import DiskMetadataCache
from csup_async.model.errors import CsupError
from csup_async.stores.shared import STABLE_SCOPE

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import asyncio, json, sys
from pathlib import Path
import csup_async

async def main(url, cache, immutable):
    async with csup_async.open(url, metadata_cache=cache, immutable=immutable) as r:
        res = await r.scan(["id"])
        ids = res.to_arrow().column("id").to_pylist()
        s = r.open_stats
        print(json.dumps({"open_requests": s.requests, "open_bytes": s.bytes_read,
                          "rows": len(ids), "sum": sum(ids)}))

asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "1"))
"""


def _file(n: int, start: int = 0) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": start + i, "name": f"n{i * 31 % 1009}"} for i in range(n)])
    return out.getvalue()


def _process(url: str, cache: Path, immutable: bool) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", SCRIPT, url, str(cache), "1" if immutable else "0"],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _tail_requests(seen: list[Any]) -> list[Any]:
    return [s for s in seen if (s.headers.get("Range") or "").startswith("bytes=-")]


@pytest.mark.parametrize("immutable", [True, False])
def test_a_second_process_makes_no_metadata_request(range_server: Any, tmp_path: Path,
                                                    immutable: bool) -> None:
    name = f"dc/imm{int(immutable)}.csup"
    range_server.put(name, _file(200_000))
    url = range_server.url(name)
    first = _process(url, tmp_path / "cache", immutable)
    assert first["open_requests"] >= 1 and first["rows"] == 200_000
    range_server.reset()
    second = _process(url, tmp_path / "cache", immutable)
    assert (second["rows"], second["sum"]) == (first["rows"], first["sum"])
    seen = range_server.seen(name)
    tails = _tail_requests(seen)
    data = [s for s in seen if s not in tails]
    assert data and all(s.headers.get("If-Match") for s in data), "the scan's reads stay pinned"
    assert second["open_bytes"] == 0, "no tail bytes"
    if immutable:
        assert tails == [] and second["open_requests"] == 0
    else:
        assert len(tails) == 1 and second["open_requests"] == 1
        assert tails[0].headers.get("If-None-Match"), "the revalidation is conditional"


def test_a_replaced_object_is_read_anew_after_revalidation(range_server: Any,
                                                           tmp_path: Path) -> None:
    name = "dc/replaced.csup"
    range_server.put(name, _file(1000))
    url = range_server.url(name)
    _process(url, tmp_path / "cache", False)
    os.utime(range_server.root / name, ns=(1, 1))  # a new mtime: a new ETag, as would a write
    range_server.put(name, _file(1500, start=10))
    again = _process(url, tmp_path / "cache", False)
    assert (again["rows"], again["sum"]) == (1500, sum(range(10, 1510)))
    assert again["open_bytes"] > 0


def test_a_damaged_entry_is_a_miss_and_is_removed(range_server: Any, tmp_path: Path) -> None:
    name = "dc/damaged.csup"
    range_server.put(name, _file(1000))
    url = range_server.url(name)
    cache = tmp_path / "cache"
    _process(url, cache, True)
    (entry,) = list(cache.glob("*.csupmeta"))
    entry.write_bytes(entry.read_bytes()[:-7] + b"garbage")
    again = _process(url, cache, True)
    assert again["rows"] == 1000 and again["open_requests"] >= 1
    assert len(list(cache.glob("*.csupmeta"))) == 1  # written anew


def test_concurrent_processes_share_one_directory(range_server: Any, tmp_path: Path) -> None:
    names = [f"dc/many{i}.csup" for i in range(3)]
    for i, n in enumerate(names):
        range_server.put(n, _file(500 + i))
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, range_server.url(n), str(cache), "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for n in names * 2]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert not list(cache.glob(".tmp-*")), "no temporary file left behind"
    assert len(list(cache.glob("*.csupmeta"))) == 3
    range_server.reset()
    for n in names:
        assert _process(range_server.url(n), cache, True)["open_requests"] == 0
        assert _tail_requests(range_server.seen(n)) == []


def test_the_directory_stays_within_its_bound(range_server: Any, tmp_path: Path) -> None:
    async def main() -> DiskMetadataCache:
        cache = DiskMetadataCache(tmp_path / "small", max_disk_bytes=40_000)
        for i in range(8):
            name = f"dc/bound{i}.csup"
            range_server.put(name, _file(2000, start=i))
            async with csup_async.open(range_server.url(name), metadata_cache=cache) as r:
                await r.scan(["id"])
        return cache

    import asyncio

    cache = asyncio.run(main())
    files = list(cache.directory.glob("*.csupmeta"))
    assert 0 < len(files) < 8
    assert sum(f.stat().st_size for f in files) <= 40_000


def test_bad_options_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(CsupError, match="metadata cache"):
        DiskMetadataCache(tmp_path / "file" / "sub")
    with pytest.raises(CsupError, match="max_disk_bytes"):
        DiskMetadataCache(tmp_path / "ok", max_disk_bytes=-1)


def test_the_environment_names_the_cache_for_opens_that_name_none(range_server: Any,
                                                                  tmp_path: Path) -> None:
    """``$CSUP_METADATA_CACHE``: a second process that names no cache revalidates with one
    conditional request and reads no tail bytes."""
    name = "dc/env.csup"
    range_server.put(name, _file(3000))
    env = dict(os.environ, PYTHONPATH=str(ROOT), CSUP_METADATA_CACHE=str(tmp_path / "env"))
    script = SCRIPT.replace("metadata_cache=cache, ", "")

    def run() -> dict[str, Any]:
        out = subprocess.run([sys.executable, "-c", script, range_server.url(name), "-", "0"],
                             capture_output=True, text=True, env=env, timeout=120, check=False)
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout.strip().splitlines()[-1]))

    first = run()
    range_server.reset()
    second = run()
    assert (second["rows"], second["sum"]) == (first["rows"], first["sum"])
    tails = _tail_requests(range_server.seen(name))
    assert len(tails) == 1 and tails[0].headers.get("If-None-Match")
    assert second["open_bytes"] == 0
    assert list((tmp_path / "env").glob("*.csupmeta"))


def test_s3_revalidation_answers_304_with_no_tail_bytes(moto_s3: Any, tmp_path: Path) -> None:
    """Against moto: a fresh cache over the same directory (as a new process would have)
    revalidates with If-None-Match and reads no tail bytes; a replaced object is read anew."""
    key = moto_s3.put("dc/s3.csup", _file(3000))
    url = f"s3://{key}"
    opts = moto_s3.store_options()

    async def open_once(rows_from: int) -> tuple[int, int, int]:
        cache = DiskMetadataCache(tmp_path / "s3")  # nothing in memory: the disk answers
        async with csup_async.open(url, metadata_cache=cache, **opts) as r:
            res = await r.scan(["id"])
            assert res.to_arrow().column("id")[0].as_py() == rows_from
            return r.open_stats.requests, r.open_stats.bytes_read, res.num_rows

    import asyncio

    first = asyncio.run(open_once(0))
    assert first[1] > 0
    assert asyncio.run(open_once(0)) == (1, 0, 3000)
    moto_s3.put("dc/s3.csup", _file(2000, start=5))
    _, nbytes, rows = asyncio.run(open_once(5))
    assert nbytes > 0 and rows == 2000


def test_a_store_passed_by_hand_is_cached_in_memory_only(range_server: Any,
                                                         tmp_path: Path) -> None:
    """Its scope is numbered in this process only: on disk it could answer another
    process's store of the same number, with other credentials."""
    import asyncio

    from csup_async.stores import HTTPStore

    range_server.put("dc/own.csup", _file(500))
    cache = DiskMetadataCache(tmp_path / "own")

    async def main() -> int:
        store = HTTPStore()
        try:
            for _ in range(2):
                async with csup_async.open(range_server.url("dc/own.csup"), store=store,
                                           metadata_cache=cache, immutable=True) as r:
                    await r.scan(["id"])
                    last = r.open_stats.requests
            return last
        finally:
            await store.close()

    assert asyncio.run(main()) == 0  # the memory layer still answers
    assert not list((tmp_path / "own").glob("*.csupmeta"))


# ---------------------------------------------- whole immutable objects (lakes) ---
SHARED = (STABLE_SCOPE, ("csup_async.stores.http", "HttpStore", None, ("map", ())))


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=4096), key=st.text(min_size=1, max_size=40))
def test_an_object_kept_is_the_object_read_back_by_another_cache(
        tmp_path_factory: pytest.TempPathFactory, data: bytes, key: str) -> None:
    where = tmp_path_factory.mktemp("objs")
    DiskMetadataCache(where).put_object((SHARED, key), data)
    other = DiskMetadataCache(where)  # what a second process opens
    assert other.get_object((SHARED, key)) == data
    assert other.get_object((SHARED, key + "x")) is None


def test_a_damaged_or_misnamed_object_file_is_a_miss_and_is_removed(tmp_path: Path) -> None:
    cache = DiskMetadataCache(tmp_path)
    cache.put_object((SHARED, "a/1.zng"), b"entry one")
    cache.put_object((SHARED, "a/2.zng"), b"entry two")
    one, two = sorted(tmp_path.glob("*.csupobj"), key=lambda f: f.read_bytes())
    one.write_bytes(one.read_bytes()[:-1] + b"X")  # same length, other bytes
    two.write_bytes(b"not ours")
    assert cache.get_object((SHARED, "a/1.zng")) is None
    assert cache.get_object((SHARED, "a/2.zng")) is None
    assert not list(tmp_path.glob("*.csupobj"))


def test_large_objects_and_private_scopes_stay_off_disk(tmp_path: Path) -> None:
    from csup_async.stores.diskcache import MAX_DISK_OBJECT

    cache = DiskMetadataCache(tmp_path)
    cache.put_object((SHARED, "big"), bytes(MAX_DISK_OBJECT + 1))
    cache.put_object((("instance", 7), "private"), b"x")
    assert not list(tmp_path.glob("*.csupobj"))
    cache.put_object((SHARED, "small"), b"k" * 100)
    (f,) = tmp_path.glob("*.csupobj")
    assert b"small" not in f.read_bytes() and oct(f.stat().st_mode & 0o777) == "0o600"


def test_objects_count_toward_the_directory_bound(tmp_path: Path) -> None:
    cache = DiskMetadataCache(tmp_path, max_disk_bytes=20_000)
    for i in range(10):
        cache.put_object((SHARED, f"k{i}"), bytes([i]) * 5000)
    total = sum(f.stat().st_size for f in tmp_path.glob("*.csupobj"))
    assert 0 < total <= 20_000
    assert cache.get_object((SHARED, "k9")) == bytes([9]) * 5000  # the newest stays
