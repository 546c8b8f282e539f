"""Server fixtures for the store tests: real servers on 127.0.0.1, one per session.

Each is skipped (with the reason) only when its package or binary is missing;
a server that is installed but fails to start is an error, not a skip.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support import servers

# CI draws the same examples every run (a property that fails there fails for
# everyone, reproducibly); a developer's runs draw new ones each time and so keep
# finding the rare cases (HYPOTHESIS_PROFILE=ci reproduces CI's draws).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("HYPOTHESIS_PROFILE") or os.environ.get("CI"):
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ci")


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[servers.MotoS3]:
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("boto3") is None:
        pytest.skip("moto[server] is not installed (pip install 'moto[server]')")
    server = servers.MotoS3().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[servers.GcsEmulator]:
    if importlib.util.find_spec("gcp_storage_emulator") is None:
        pytest.skip("gcp-storage-emulator is not installed (pip install gcp-storage-emulator)")
    server = servers.GcsEmulator().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def nginx_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Nginx]:
    binary = servers.nginx_binary()
    if binary is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    server = servers.Nginx(binary, tmp_path_factory.mktemp("nginx")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def range_server_session(tmp_path_factory: pytest.TempPathFactory
                         ) -> Iterator[servers.RangeServer]:
    server = servers.RangeServer(Path(tmp_path_factory.mktemp("range-server"))).start()
    yield server
    server.stop()


@pytest.fixture
def range_server(range_server_session: servers.RangeServer) -> servers.RangeServer:
    """The session's aiohttp range server with no faults, modes or request log left over."""
    range_server_session.reset()
    return range_server_session


@pytest.fixture(autouse=True)
def _fresh_endpoint_measurements() -> Iterator[None]:
    """Each test starts with no endpoint measured: the process-wide calibration windows
    (csup_async/stores/calibrate.py) would otherwise carry one test's requests into the
    next test's plans (servers on loopback share hosts, and session servers ports)."""
    from csup_async.readers import headhint
    from csup_async.readers.parsememo import forget_tails, parse_memo
    from csup_async.stores.calibrate import forget

    forget()
    parse_memo().clear()  # and no test's parse or plans answer another's open
    forget_tails()
    headhint.forget()  # every test's first open in a place is cold (readers/headhint)
    yield


@pytest.fixture(scope="module")
def own_layout() -> Iterator[None]:
    """Files written with no ``target=`` are in this library's own layout (``csup-async``):
    for modules of tests about what only that layout has (segment statistics and cuts,
    plans and requests, checksums, typed nulls, the trailer, the per-value writer's
    bytes), as ``pytestmark = pytest.mark.usefixtures("own_layout")``; module-scoped so
    the module's own fixtures write that layout too.  The default target is ``super``
    (CSUP v23); tests about values leave it so."""
    from csup_async.readers import headhint
    from csup_async.writers import targets

    saved = targets.DEFAULT_TARGET
    targets.DEFAULT_TARGET = "csup-async"
    # and read as a program that reads only this layout: no head read beside the tail
    # read in a place not seen before (what that read costs this layout is
    # tests/e2e/stores/test_v23_requests.py's)
    headhint.cold_head_reads = False
    env = os.environ.get("CSUP_COLD_HEAD_READ")
    os.environ["CSUP_COLD_HEAD_READ"] = "0"  # and the processes the module starts (the CLI)
    try:
        yield
    finally:
        targets.DEFAULT_TARGET = saved
        headhint.cold_head_reads = True
        if env is None:
            os.environ.pop("CSUP_COLD_HEAD_READ", None)
        else:
            os.environ["CSUP_COLD_HEAD_READ"] = env
