"""Measurements are kept per endpoint for the whole process, and by the on-disk cache."""

from __future__ import annotations

import asyncio
import io
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.stores import HTTPStore, S3Store
from csup_async.stores.calibrate import endpoint_of, measurements_for
from csup_async.stores.diskcache import DiskMetadataCache
from planner.profiles import PROFILES

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


DATA = bytes(range(256)) * 4096  # 1 MiB


def _file() -> bytes:
    out = io.BytesIO()
    rnd = random.Random(0)
    csup_async.write(out, [{"a": i, "b": rnd.randbytes(24).hex()} for i in range(50_000)])
    return out.getvalue()


def test_an_endpoint_is_scheme_host_and_port_never_credentials_or_query() -> None:
    assert endpoint_of("https://user:secret@Example.COM/b/k?X-Amz-Signature=abc") == \
        "https://example.com:443"
    assert endpoint_of("http://127.0.0.1:9000/b/k") == "http://127.0.0.1:9000"
    assert endpoint_of("http://[::1]/x") == "http://[::1]:80"
    s3 = S3Store(endpoint_url="http://user:pw@127.0.0.1:9999/", region="us-east-1")
    assert s3.endpoint_for("b/k") == "http://127.0.0.1:9999"
    assert S3Store(region="eu-west-1").endpoint_for("b/k") == \
        "https://s3.eu-west-1.amazonaws.com:443"


def test_two_stores_of_one_endpoint_share_its_measurements(range_server: Any) -> None:
    range_server.put("m/a.bin", DATA)
    url = range_server.url("m/a.bin")

    async def main() -> tuple[Any, Any, list[bool]]:
        one, two = HTTPStore(), HTTPStore()
        try:
            info = await one.info(url)
            await asyncio.gather(*(one.read_range(url, i * 1000, 1000, info.version)
                                   for i in range(3)))  # a cold pool: new connections
            for i in range(4):
                await two.read_range(url, i * 1000, 1000, info.version)
            return one.measurements_of(url), two.measurements_of(url), []
        finally:
            await one.close()
            await two.close()

    a, b, _ = asyncio.run(main())
    assert a is b is measurements_for(endpoint_of(url))
    assert sum(1 for s in a.samples if s.nbytes == 1000) == 7
    fresh = [s.fresh for s in a.samples if s.nbytes == 1000]
    # of the three sent at once, one reused the connection of the info request and two
    # opened one; the second store's first request opened one, its next three reused it
    assert sorted(fresh[:3]) == [False, True, True]
    assert fresh[3:] == [True, False, False, False]


def _explain(url: str, calibrate: bool, scans: int) -> str:
    async def main() -> str:
        store = HTTPStore()
        try:
            r = csup_async.Reader(store, url, owns_store=False, profile="s3",
                                  calibrate=calibrate)
            await r.load()
            for _ in range(scans):
                await r.scan(["a", "b"])
            return (await r.plan(["a", "b"])).explain()
        finally:
            await store.close()

    return asyncio.run(main())


def test_explain_shows_the_profile_assumed_and_the_one_measured(range_server: Any) -> None:
    range_server.put("m/f.csup", _file())
    url = range_server.url("m/f.csup")
    text = _explain(url, True, 0)
    assert "profile assumed: s3 (static until 5 requests are measured)" in text
    assert "profile measured: not yet (1 request to http://127.0.0.1:" in text
    text = _explain(url, True, 5)
    assert "profile assumed: s3 (measured) (calibrated from measured requests)" in text
    line = next(x for x in text.splitlines() if x.startswith("profile measured:"))
    assert "first byte" in line and "static s3: 50 ms, 100 MB/s" in line
    assert "scan plan (profile s3 (measured):" in text
    text = _explain(url, False, 0)  # the samples of the runs before are the process's
    assert "profile assumed: s3 (static: calibration off)" in text
    assert "profile measured: first byte" in text and "scan plan (profile s3:" in text


def test_calibration_is_opt_in_for_http_and_never_for_local(range_server: Any,
                                                            tmp_path: Path) -> None:
    """By default a reader keeps its static profile while the store still measures (so
    explain() can show what was measured); calibrate=True plans with the measurements."""
    range_server.put("m/d.csup", _file())
    (tmp_path / "d.csup").write_bytes(_file())

    async def main() -> tuple[bool, bool, bool, bool, bool]:
        async with csup_async.open(range_server.url("m/d.csup"), profile="s3") as r:
            for _ in range(6):
                await r.scan(["a", "b"])
            default = (r.calibrate, r.profile is not r.static_profile)
        async with csup_async.open(range_server.url("m/d.csup"), profile="s3",
                                   calibrate=True) as r:
            for _ in range(6):
                await r.scan(["a", "b"])
            moved = r.profile is not r.static_profile
        async with csup_async.open(str(tmp_path / "d.csup"), calibrate=True) as local:
            await local.scan(["a", "b"])
            static = local.profile is local.static_profile
            return (*default, moved, local.measurements is None, static)

    off, default_moved, moved, local_measures_nothing, local_static = asyncio.run(main())
    assert (off, default_moved) == (False, False)
    assert moved
    assert local_measures_nothing and local_static


def test_local_files_measure_nothing_and_explain_says_nothing(tmp_path: Path) -> None:
    (tmp_path / "f.csup").write_bytes(_file())

    async def main() -> str:
        async with csup_async.open(str(tmp_path / "f.csup")) as r:
            assert r.measurements is None and not r.calibrate
            return (await r.plan(["a"])).explain()

    assert "profile assumed" not in asyncio.run(main())


_CHILD = """
import asyncio, json, pathlib, sys
import csup_async
from csup_async.stores.calibrate import endpoint_of, measurements_for

async def main():
    async with csup_async.open(sys.argv[1], metadata_cache=pathlib.Path(sys.argv[2]),
                               profile="s3", calibrate=True) as r:
        before = len(measurements_for(endpoint_of(sys.argv[1])).samples)
        if sys.argv[3] == "scan":
            for _ in range(6):
                await r.scan(["a", "b"])
        return before, r.profile.name

print(json.dumps(asyncio.run(main())))
"""


def test_a_second_process_starts_calibrated_from_the_disk_cache(
        range_server: Any, tmp_path: Path) -> None:
    range_server.put("m/p.csup", _file())
    url = range_server.url("m/p.csup")
    cache = tmp_path / "cache"

    def child(what: str) -> list[Any]:
        out = subprocess.run([sys.executable, "-c", _CHILD, url, str(cache), what],
                             capture_output=True, text=True, check=True, timeout=120)
        return json.loads(out.stdout)

    # (the count is taken after the open: its own tail read is one request)
    assert child("open") == [1, "s3"]  # nothing measured anywhere yet
    assert not list(cache.glob("*.csupcal"))  # one request is no calibration to keep
    # the metadata is cached now: the open's conditional request is a 304 (no body, no
    # sample)
    assert child("scan")[0] == 0
    files = list(cache.glob("*.csupcal"))
    assert len(files) == 1
    kept = json.loads(files[0].read_bytes())
    assert kept["endpoint"] == endpoint_of(url) and len(kept["samples"]) >= 5
    assert "?" not in files[0].read_text()  # no path or query of any object
    before, name = child("open")
    assert before >= 5 and name == "s3 (measured)"  # calibrated before its first scan
    # a damaged file is no calibration, not an error
    files[0].write_bytes(b"{not json")
    assert DiskMetadataCache(cache).get_measurements(endpoint_of(url)) == []
    assert child("open") == [0, "s3"]


def test_static_profiles_stay_the_starting_point() -> None:
    m = measurements_for("http://example.invalid:80")
    assert m.profile(PROFILES["s3"]) is PROFILES["s3"]
