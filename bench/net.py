"""Network helpers the test servers and the fault proxy share, all on 127.0.0.1.

One place for what every server fixture needs: a free port, waiting until a
subprocess listens (or failing with its stderr when it dies first), stopping a
subprocess for sure, an asyncio loop in a thread (servers that keep serving
while a test blocks, or while another process is the client), and the fault
description both fault injectors build on.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Self, TypeVar

HOST = "127.0.0.1"
T = TypeVar("T")


def free_port() -> int:
    """A port nothing listens on once this returns (the socket is closed again)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = 15.0, proc: subprocess.Popen[Any] | None = None,
                  what: str = "server") -> None:
    """Return once ``port`` accepts; raise with ``proc``'s stderr if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"{what} exited with {proc.returncode}: {err[-2000:]}")
        try:
            socket.create_connection((HOST, port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {HOST}:{port} within {timeout} s")


def stop_process(proc: subprocess.Popen[Any] | None) -> None:
    """Terminate (then kill) ``proc`` and close its stderr pipe; None and dead ones are fine."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr:
        proc.stderr.close()


class LoopThread:
    """An asyncio event loop running in a daemon thread.

    A server on it keeps answering while the test's own code blocks (a sync
    call, a subprocess such as the CLI, another event loop).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.new_event_loop()
        self.loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
        self._thread.start()
        return loop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        """Run ``coro`` on the loop and wait for its result."""
        assert self.loop is not None, "the loop thread is not running"
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        loop = self.loop
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()
        self.loop = None


@dataclass(frozen=True)
class FaultSpec:
    """What the fault injectors (servers.py's RangeServer, fault_proxy.py) share.

    Each subclasses it with the faults only it can make; the constructors
    return the subclass, so ``Fault.error(503)`` is that injector's Fault.
    """

    kind: str
    status: int = 0
    retry_after: str | None = None
    seconds: float = 0.0
    after_bytes: int = 0

    @classmethod
    def error(cls, status: int, retry_after: str | None = None) -> Self:
        """Answer with ``status`` (an S3-style XML body) and, if given, ``Retry-After``."""
        return cls("status", status=status, retry_after=retry_after)

    @classmethod
    def stall(cls, seconds: float, after_bytes: int = 0) -> Self:
        """Go silent for ``seconds``, before the headers (or after some body bytes)."""
        return cls("stall", seconds=seconds, after_bytes=after_bytes)
