"""The metadata cache's key holds every part of an object's identity, however it was


configured: an S3 endpoint from ``AWS_ENDPOINT_URL`` and a GCS emulator from
``STORAGE_EMULATOR_HOST`` as much as one passed as an option (issue #39 item 7).

Two real servers on different ports hold different objects at the same bucket and key;
a process pointed at the second, with ``immutable=True`` and the on-disk cache the first
filled, must read the second's object."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import csup_async
from tests.support import servers
from tests.support.paths import ROOT

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

SCRIPT = r"""
import asyncio, json, sys
from pathlib import Path
import csup_async

async def main(url, cache):
    async with csup_async.open(url, metadata_cache=Path(cache), immutable=True) as r:
        res = await r.scan(["id"])
        ids = res.to_arrow().column("id").to_pylist()
        print(json.dumps({"rows": len(ids), "first": ids[0],
                          "open_requests": r.open_stats.requests}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _file(n: int, start: int) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": start + i, "s": f"v{i}"} for i in range(n)])
    return out.getvalue()


def _process(url: str, cache: Path, **env: str) -> dict[str, Any]:
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("AWS_", "STORAGE_EMULATOR"))}
    full.update(PYTHONPATH=str(ROOT), AWS_EC2_METADATA_DISABLED="true",
                AWS_CONFIG_FILE=str(cache / "none"),
                AWS_SHARED_CREDENTIALS_FILE=str(cache / "none"), **env)
    out = subprocess.run([sys.executable, "-c", SCRIPT, url, str(cache)], capture_output=True,
                         text=True, env=full, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def two_motos(moto_s3: servers.MotoS3) -> Iterator[tuple[servers.MotoS3, servers.MotoS3]]:
    """The session's moto and one in a process of its own (moto's servers of one process
    share their buckets)."""
    other = servers.MotoS3Process().start()
    try:
        yield moto_s3, other
    finally:
        other.stop()


def _s3_env(server: servers.MotoS3, name: str = "AWS_ENDPOINT_URL") -> dict[str, str]:
    return {name: server.endpoint, "AWS_ACCESS_KEY_ID": server.ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": server.SECRET_KEY, "AWS_DEFAULT_REGION": server.REGION}


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"])
def test_an_s3_endpoint_from_the_environment_is_part_of_the_key(
        two_motos: tuple[servers.MotoS3, servers.MotoS3], tmp_path: Path,
        variable: str) -> None:
    a, b = two_motos
    key = a.put(f"ident/{variable}.csup", _file(300, start=0))
    assert b.put(f"ident/{variable}.csup", _file(500, start=1000)) == key
    cache = tmp_path / "cache"
    first = _process(f"s3://{key}", cache, **_s3_env(a, variable))
    assert (first["rows"], first["first"]) == (300, 0)
    again = _process(f"s3://{key}", cache, **_s3_env(a, variable))
    assert again["open_requests"] == 0, "the cache still answers for the same endpoint"
    other = _process(f"s3://{key}", cache, **_s3_env(b, variable))
    assert (other["rows"], other["first"]) == (500, 1000), "endpoint B's object"
    assert other["open_requests"] >= 1


def test_an_s3_endpoint_from_the_environment_picks_the_shared_store(
        two_motos: tuple[servers.MotoS3, servers.MotoS3], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In one process too: a shared store made for endpoint A is not reused once the
    environment names endpoint B."""
    a, b = two_motos
    key = a.put("ident/inproc.csup", _file(30, start=0))
    b.put("ident/inproc.csup", _file(50, start=7))

    async def first_id() -> int:
        async with csup_async.open(f"s3://{key}") as r:
            return int((await r.scan(["id"])).to_arrow().column("id")[0].as_py())

    async def both() -> list[int]:
        got = []
        for server in (a, b):
            for k, v in _s3_env(server).items():
                monkeypatch.setenv(k, v)
            got.append(await first_id())
        return got

    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert asyncio.run(both()) == [0, 7]


def test_a_gcs_emulator_from_the_environment_is_part_of_the_key(
        gcs_emulator: servers.GcsEmulator, tmp_path: Path) -> None:
    other = servers.GcsEmulator().start()
    try:
        name = a_name = gcs_emulator.put("ident/g.csup", _file(200, start=0))
        assert other.put("ident/g.csup", _file(400, start=500)) == a_name
        cache = tmp_path / "cache"
        first = _process(f"gs://{name}", cache, STORAGE_EMULATOR_HOST=gcs_emulator.host)
        assert (first["rows"], first["first"]) == (200, 0)
        again = _process(f"gs://{name}", cache, STORAGE_EMULATOR_HOST=gcs_emulator.host)
        assert again["open_requests"] == 0
        b = _process(f"gs://{name}", cache, STORAGE_EMULATOR_HOST=other.host)
        assert (b["rows"], b["first"]) == (400, 500), "emulator B's object"
    finally:
        other.stop()


def test_a_relative_local_path_names_the_file_in_its_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``a.csup`` opened from two directories is two files, also with ``immutable=True``
    and one cache directory (found on the way: the cache keyed the path as given)."""
    for d, start in (("d1", 0), ("d2", 100)):
        (tmp_path / d).mkdir()
        csup_async.write(tmp_path / d / "a.csup", [{"id": start + i} for i in range(5)])
    cache = tmp_path / "cache"
    got = []
    for d in ("d1", "d2", "d1"):
        monkeypatch.chdir(tmp_path / d)
        got.append(_process("a.csup", cache)["first"])
    assert got == [0, 100, 0]
