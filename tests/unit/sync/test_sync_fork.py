"""A ``BatchStream`` begun in a parent and continued in a forked child raises a clear
CsupError at once, never blocks (issue #39 item 9): its reads run on the parent's I/O
thread, which a child does not have.  A stream begun in the child, ``read()`` and
``scan()`` work there.  Each child reports through a pipe and is waited for with a
timeout, so a regression fails the test instead of hanging it."""

from __future__ import annotations

import json
import multiprocessing
import os
import select
import sys
from typing import Any

import pytest

import csup_async

pytestmark = [pytest.mark.usefixtures("own_layout"),
              pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")]
ROWS = 3000


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = tmp_path_factory.mktemp("fork") / "f.csup"
    csup_async.write(p, [{"id": i} for i in range(ROWS)], segment_thresh=1 << 12)
    return str(p)


def _in_child(path: str, stream: Any) -> dict[str, Any]:
    """What the child saw of the parent's ``stream`` and of fresh reads."""
    out: dict[str, Any] = {}
    try:
        next(stream)
        out["next"] = "a batch"
    except csup_async.CsupError as e:
        out["next"] = f"CsupError: {e}"
    stream.close()  # neither hangs nor touches the parent's task
    with csup_async.open_sync(path) as r:
        out["fresh"] = sum(b.num_rows for b in r.iter_batches(["id"], batch_rows=500))
        out["scan"] = r.scan(["id"]).num_rows
    out["read"] = csup_async.read(path, ["id"]).num_rows
    return out


def _wait(fd: int, pid: int) -> dict[str, Any]:
    ready, _, _ = select.select([fd], [], [], 120)
    if not ready:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    with os.fdopen(fd) as f:
        data = f.read()
    os.waitpid(pid, 0)
    return dict(json.loads(data))


def _check(got: dict[str, Any]) -> None:
    assert got["next"].startswith("CsupError: this batch stream was started in process")
    assert "forked child cannot continue it" in got["next"]
    assert (got["fresh"], got["scan"], got["read"]) == (ROWS, ROWS, ROWS)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork with threads running
def test_a_stream_continued_in_an_os_fork_child_raises_at_once(path: str) -> None:
    with csup_async.open_sync(path) as r:
        stream = r.iter_batches(["id"], batch_rows=500)
        first = next(stream)
        assert first.num_rows == 500
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(rfd)
            try:
                got = _in_child(path, stream)
            except BaseException as e:  # reported, not raised: the child is not pytest
                got = {"error": repr(e)}
            os.write(wfd, json.dumps(got).encode())
            os._exit(0)
        os.close(wfd)
        got = _wait(rfd, pid)
        assert "error" not in got, got
        _check(got)
        # the parent's stream is untouched by the child
        assert first.num_rows + sum(b.num_rows for b in stream) == ROWS


def _mp_child(path: str, stream: Any, q: Any) -> None:
    try:
        q.put(_in_child(path, stream))
    except BaseException as e:
        q.put({"error": repr(e)})


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.skipif(sys.platform != "linux", reason="the fork start method is Linux's default")
def test_a_stream_continued_in_a_multiprocessing_fork_child_raises_at_once(path: str) -> None:
    ctx = multiprocessing.get_context("fork")
    with csup_async.open_sync(path) as r:
        stream = r.iter_batches(["id"], batch_rows=500)
        next(stream)
        q = ctx.Queue()
        p = ctx.Process(target=_mp_child, args=(path, stream, q))
        p.start()
        try:
            got = q.get(timeout=120)
        finally:
            p.join(30)
            if p.is_alive():
                p.kill()
        assert "error" not in got, got
        _check(got)
        stream.close()
