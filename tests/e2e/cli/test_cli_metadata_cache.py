"""``CSUP_METADATA_CACHE=dir csup-async scan ...`` run twice: the second run asks nothing
about metadata (immutable objects) or one conditional request per object."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import csup_async

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROOT = Path(__file__).resolve().parents[3]


def _file(k: int) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"k": k, "id": i, "name": f"n{i * 31 % 1009}"}
                           for i in range(20_000)])
    return out.getvalue()


def _cli(args: list[str], cache: Path | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CSUP_METADATA_CACHE", None)
    if cache is not None:
        env["CSUP_METADATA_CACHE"] = str(cache)
    return subprocess.run([sys.executable, "-m", "csup_async.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def _split(seen: list[Any]) -> tuple[list[Any], list[Any]]:
    """(metadata requests: the tail reads; data requests: reads pinned to a version)."""
    meta = [s for s in seen if not s.headers.get("If-Match")]
    data = [s for s in seen if s.headers.get("If-Match")]
    return meta, data


@pytest.fixture
def objects(range_server: Any) -> list[str]:
    names = [f"clicache/p{k}.csup" for k in range(3)]
    for k, name in enumerate(names):
        range_server.put(name, _file(k))
    return [range_server.url(n) for n in names]


def test_a_second_cli_run_over_immutable_objects_makes_no_metadata_request(
        range_server: Any, objects: list[str], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    args = ["scan", *objects, "-c", "k,id", "--format", "json", "--immutable"]
    first = _cli(args, cache)
    assert first.returncode == 0, first.stderr
    meta, _ = _split(range_server.seen(kind=None))
    assert len(meta) == len(objects)  # one tail read each, the first time
    assert list(cache.glob("*.csupmeta"))
    range_server.reset()
    second = _cli(args, cache)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    meta, data = _split(range_server.seen(kind=None))
    assert meta == [], [s.headers for s in meta]
    # (these objects are small: the cached tail holds their columns, so nothing at all)
    assert data == []


def test_a_second_cli_run_revalidates_each_object_with_one_conditional_request(
        range_server: Any, objects: list[str], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    args = ["scan", *objects, "-c", "k,id", "--format", "json"]
    first = _cli(args, cache)
    assert first.returncode == 0, first.stderr
    range_server.reset()
    second = _cli(args, cache)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    meta, _ = _split(range_server.seen(kind=None))
    assert sorted(s.name for s in meta) == sorted(f"clicache/p{k}.csup" for k in range(3))
    assert all(s.headers.get("If-None-Match") for s in meta), "conditional: 304, no tail"


def test_without_the_cache_every_run_reads_the_metadata(
        range_server: Any, objects: list[str]) -> None:
    args = ["scan", *objects, "-c", "k", "--format", "json"]
    for _ in range(2):
        range_server.reset()
        assert _cli(args, None).returncode == 0
        meta, _ = _split(range_server.seen(kind=None))
        assert len(meta) == len(objects) and not any(
            s.headers.get("If-None-Match") for s in meta)


def test_immutable_without_a_cache_is_a_usage_error(objects: list[str]) -> None:
    out = _cli(["scan", objects[0], "--immutable"], None)
    assert out.returncode != 0
    assert out.stderr.count("\n") == 1 and "CSUP_METADATA_CACHE" in out.stderr


def test_calibrate_flag_plans_with_measurements_and_explain_says_so(
        range_server: Any, objects: list[str], tmp_path: Path) -> None:
    """``--calibrate`` reaches the reader: the plan says what it assumed and why."""
    off = _cli(["plan", objects[0], "-c", "k,id"], None)
    on = _cli(["plan", objects[0], "-c", "k,id", "--calibrate"], None)
    assert off.returncode == 0 and on.returncode == 0, (off.stderr, on.stderr)
    assert "(static: calibration off)" in off.stdout
    assert "(static until 5 requests are measured)" in on.stdout
