"""The synchronous face: scripts, notebooks (a running loop) and Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import csup_async
from tests.support.paths import ROOT
from tests.support.servers import Fault, RangeServer

ROWS = [{"i": i, "s": f"v{i}"} for i in range(5000)]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def small(tmp_path: Path) -> str:
    path = str(tmp_path / "small.csup")
    csup_async.write(path, ROWS)
    return path


def test_plain_script_reads_without_await(small: str) -> None:
    p = _python("""
        import sys, csup_async
        res = csup_async.read(sys.argv[1], ["i"], filter="i >= 4998")
        print(res.to_pylist())
        with csup_async.open_sync(sys.argv[1]) as r:
            print(r.num_rows, sum(b.num_rows for b in r.iter_batches("s", batch_rows=700)))
            print(r.take([3, 1], "s").to_pylist())
        """, small)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "Unclosed" not in err, err  # the pools are closed at exit
    assert out.splitlines() == ["[{'i': 4998}, {'i': 4999}]", "5000 5000",
                                "[{'s': 'v3'}, {'s': 'v1'}]"]


def test_notebook_cell_with_a_running_loop(small: str) -> None:
    """A notebook runs its cells inside a running event loop: the sync face works there."""

    async def cell() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        got = csup_async.read(small, ["s"], rows=slice(10, 12)).to_pylist()
        async with csup_async.open(small) as r:  # the async face, same loop, same cell
            want = (await r.scan(["s"], rows=slice(10, 12))).to_pylist()
        return got, want

    got, want = asyncio.run(cell())
    assert got == want == [{"s": "v10"}, {"s": "v11"}]


async def test_sync_face_inside_pytest_asyncio_loop(small: str) -> None:
    with csup_async.open_sync(small) as r:
        assert r.count_rows() == 5000
        assert r.scan("i", limit=2).to_pylist() == [{"i": 0}, {"i": 1}]


def test_errors_reach_the_caller(tmp_path: Path) -> None:
    with pytest.raises(csup_async.NotFoundError):
        csup_async.read(str(tmp_path / "missing.csup"))
    bad = tmp_path / "bad.csup"
    bad.write_bytes(b"not a csup file at all" * 10)
    with pytest.raises(csup_async.FormatError) as ei:
        csup_async.read(str(bad))
    assert "bad.csup" in str(ei.value)


async def test_forgotten_await_says_what_to_do(small: str) -> None:
    opener = csup_async.open(small)
    with pytest.raises(csup_async.NotAwaitedError) as ei:
        opener.scan(["i"])
    assert isinstance(ei.value, TypeError) and isinstance(ei.value, csup_async.CsupError)
    assert "await" in str(ei.value) and "open_sync" in str(ei.value)
    with pytest.raises(TypeError, match="async with"), csup_async.open(small):
        pass
    with pytest.raises(csup_async.NotAwaitedError, match="open_dataset_sync"):
        csup_async.open_dataset([small]).files  # noqa: B018
    r = await opener  # the opener itself still works
    await r.close()


def test_stopping_a_batch_stream_leaves_no_task(small: str) -> None:
    from csup_async.sync import io_loop

    async def pending() -> list[str]:
        return [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    with csup_async.open_sync(small) as r:
        with r.iter_batches("i", batch_rows=100) as batches:
            assert next(batches).num_rows == 100
        assert asyncio.run_coroutine_threadsafe(pending(), io_loop()).result(10) == []


def test_dataset_and_glob(tmp_path: Path) -> None:
    for k in range(3):
        csup_async.write(str(tmp_path / f"part-{k}.csup"), [{"k": k, "i": i} for i in range(4)])
    res = csup_async.read(str(tmp_path / "part-*.csup"), ["k"], filter="i = 3")
    assert res.to_pylist() == [{"k": 0}, {"k": 1}, {"k": 2}]
    with csup_async.open_dataset_sync(str(tmp_path) + "/") as ds:
        assert len(ds.files) == 3 and ds.scan("i", limit=5).num_rows == 5
        assert ds.count_rows(filter="i >= 1") == 9
        assert ds.take([5, 0], "k,i").to_pylist() == [{"k": 1, "i": 1}, {"k": 0, "i": 0}]
        assert ds.head(2, ["i"], filter="k = 2").to_pylist() == [{"i": 0}, {"i": 1}]


@pytest.mark.parametrize("way", ["read", "iter_batches"])
def test_ctrl_c_cancels_a_slow_read(range_server: RangeServer, way: str) -> None:
    """SIGINT during a read stalled by the server: KeyboardInterrupt in the script, its
    task cancelled, no thread left behind, the connection closed, the loop usable."""
    # our own layout, whose iter_batches streams segment by segment (a v23 object is read
    # whole at its first batch)
    csup_async.write(str(range_server.root / "warm.csup"), ROWS, target="csup-async")
    n = 300_000  # megabytes: more than the tail read brings
    csup_async.write(str(range_server.root / "slow.csup"),
                     {"i": np.arange(n), "f": np.random.default_rng(1).random(n)},
                     target="csup-async")
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import asyncio, json, sys, threading, csup_async
        from csup_async.sync import io_loop

        async def tasks():
            return sorted(repr(t.get_coro()) for t in asyncio.all_tasks()
                          if t is not asyncio.current_task())

        def state():
            names = sorted(t.name for t in threading.enumerate())
            return names, asyncio.run_coroutine_threadsafe(tasks(), io_loop()).result(10)

        way, warm, slow = sys.argv[1:]
        csup_async.read(warm)
        for _ in csup_async.open_sync(warm).iter_batches(["i"], batch_rows=10):
            pass  # the process's pools have their threads (bounded: none per read)
        reader = csup_async.open_sync(slow)
        before = state()
        print("ready", flush=True)
        sys.stdin.readline()  # the server stalls from now on
        try:
            if way == "read":
                csup_async.read(slow)
            else:
                for batch in reader.iter_batches(["i", "f"], batch_rows=1000):
                    pass
            print(json.dumps({"interrupted": False}))
        except KeyboardInterrupt:
            after = state()
            again = csup_async.read(warm, "i").num_rows
            print(json.dumps({"interrupted": True, "before": before, "after": after,
                              "again": again}), flush=True)
        """), way, range_server.url("warm.csup"), range_server.url("slow.csup")],
        env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline().strip() == "ready"
        range_server.inject("slow.csup", Fault.stall(60, after_bytes=100))
        p.stdin.write("go\n")
        p.stdin.flush()
        deadline = time.monotonic() + 30
        while range_server.streaming == 0:  # the stalled response is being sent
            assert time.monotonic() < deadline, "the read never reached the server"
            time.sleep(0.02)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert time.monotonic() - t0 < 15  # not the 60 s stall
    assert p.returncode == 0, err
    assert "Unclosed" not in err and "was destroyed" not in err, err
    got = json.loads(out)
    assert got["interrupted"] is True
    assert got["after"] == got["before"]  # same threads, no task left on the I/O loop
    assert got["after"][1] == []
    assert got["again"] == len(ROWS)
    deadline = time.monotonic() + 10
    while range_server.streaming:  # the client closed its connection
        assert time.monotonic() < deadline, "the stalled connection was left open"
        time.sleep(0.05)
    assert range_server.aborted >= 1


def test_probes_of_private_names_stay_attribute_errors(small: str) -> None:
    """Tools that probe objects (IPython's display, hasattr) see no such attribute."""
    opener = csup_async.open(small)
    assert not hasattr(opener, "_repr_html_")
    assert getattr(opener, "_ipython_display_", None) is None
