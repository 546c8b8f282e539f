"""Every store against a real server: the same contract, checked the same way.

Backends: S3 (moto), GCS (gcp-storage-emulator, and the aiohttp server answering
like real GCS), HTTP (nginx, aiohttp), fsspec (memory, local, local behind an
async wrapper) and the local store.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from csup_async.model.errors import NotFoundError, ObjectChangedError, StoreError, TruncatedError
from csup_async.stores import (
    FsspecStore,
    GCSStore,
    HTTPStore,
    LocalStore,
    S3Store,
    Store,
    store_for,
)
from tests.support import servers

SIZE = 100_000
DATA = os.urandom(SIZE)


class Backend:
    """One store kind plus a way to create, replace and name objects on its server."""

    def __init__(self, name: str, make: Callable[..., Store], put: Callable[[str, bytes], str],
                 key: Callable[[str], str]) -> None:
        self.name, self.make, self._put, self.key = name, make, put, key

    def put(self, name: str, data: bytes) -> str:
        return self._put(name, data)


def _local(tmp: Path, make: Callable[..., Store], name: str) -> Backend:
    def put(n: str, data: bytes) -> str:
        p = tmp / n
        p.parent.mkdir(parents=True, exist_ok=True)
        t = p.with_name(p.name + ".tmp")
        t.write_bytes(data)
        t.replace(p)  # a new inode, like an object store's replacement
        return str(p)

    return Backend(name, make, put, lambda n: str(tmp / n))


@pytest.fixture(params=["s3-moto", "gcs-emulator", "gcs-aiohttp", "http-nginx", "http-aiohttp",
                        "fsspec-memory", "fsspec-local", "fsspec-async", "local"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    kind = request.param
    if kind == "s3-moto":
        moto: servers.MotoS3 = request.getfixturevalue("moto_s3")
        return Backend(kind, lambda **o: S3Store(**moto.store_options(), **o), moto.put,
                       lambda n: f"{moto.BUCKET}/{n}")
    if kind == "gcs-emulator":
        emu: servers.GcsEmulator = request.getfixturevalue("gcs_emulator")
        return Backend(kind, lambda **o: GCSStore(endpoint=emu.endpoint, **o), emu.put,
                       lambda n: f"{emu.BUCKET}/{n}")
    if kind == "gcs-aiohttp":
        rs: servers.RangeServer = request.getfixturevalue("range_server")
        return Backend(kind, lambda **o: GCSStore(endpoint=rs.endpoint, **o),
                       lambda n, d: rs.put(f"bkt/{n}", d), lambda n: f"bkt/{n}")
    if kind == "http-nginx":
        ngx: servers.Nginx = request.getfixturevalue("nginx_server")
        return Backend(kind, HTTPStore, ngx.put, ngx.url)
    if kind == "http-aiohttp":
        rs = request.getfixturevalue("range_server")
        return Backend(kind, HTTPStore, lambda n, d: rs.url(rs.put(n, d)), rs.url)
    if kind == "fsspec-memory":
        import fsspec

        fs = fsspec.filesystem("memory")
        root = f"memory://csup-tests/{uuid.uuid4().hex}"

        def put(n: str, data: bytes) -> str:
            fs.pipe_file(f"{root}/{n}", data)
            return f"{root}/{n}"

        return Backend(kind, lambda **o: FsspecStore(protocol="memory", **o), put,
                       lambda n: f"{root}/{n}")
    if kind == "fsspec-local":
        import fsspec

        return _local(tmp_path, lambda **o: FsspecStore(fsspec.filesystem("file"), **o), kind)
    if kind == "fsspec-async":
        from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper
        from fsspec.implementations.local import LocalFileSystem

        def make_async(**o: Any) -> Store:
            fs = AsyncFileSystemWrapper(LocalFileSystem(), asynchronous=True)
            return FsspecStore(fs, **o)

        return _local(tmp_path, make_async, kind)
    return _local(tmp_path, LocalStore, kind)


def _name(suffix: str = "obj.bin") -> str:
    return f"t-{uuid.uuid4().hex[:12]}/{suffix}"


async def test_tail_shorter_than_object(backend: Backend) -> None:
    key = backend.put(_name(), DATA)
    async with backend.make() as store:
        tail = await store.read_tail(key, 4096)
    assert tail.data == DATA[-4096:]
    assert tail.info.size == SIZE
    assert tail.offset == SIZE - 4096
    assert tail.info.version


async def test_tail_longer_than_object(backend: Backend) -> None:
    small = DATA[:1234]
    key = backend.put(_name(), small)
    async with backend.make() as store:
        tail = await store.read_tail(key, 1 << 20)
    assert tail.data == small
    assert tail.info.size == 1234
    assert tail.offset == 0


async def test_tail_of_empty_object(backend: Backend) -> None:
    if backend.name == "gcs-emulator":
        pytest.skip("gcp-storage-emulator cannot store an empty object (its media upload "
                    "fails on an empty body); gcs-aiohttp covers GCS here")
    key = backend.put(_name(), b"")
    async with backend.make() as store:
        tail = await store.read_tail(key, 100)
        assert (await store.info(key)).size == 0
    assert tail.data == b""
    assert tail.info.size == 0


async def test_info_and_version_agree_with_the_tail(backend: Backend) -> None:
    key = backend.put(_name(), DATA)
    async with backend.make() as store:
        tail = await store.read_tail(key, 10)
        again = await store.read_tail(key, 99)
        info = await store.info(key)
    assert info.size == SIZE
    assert info.version == tail.info.version == again.info.version


@pytest.mark.parametrize(("offset", "length"), [(0, 1), (SIZE - 1, 1), (0, SIZE),
                                                (12_345, 54_321), (99_000, 1000)])
async def test_ranged_reads(backend: Backend, offset: int, length: int) -> None:
    key = backend.put(_name(), DATA)
    async with backend.make() as store:
        version = (await store.read_tail(key, 100)).info.version
        pinned = await store.read_range(key, offset, length, version)
        unpinned = await store.read_range(key, offset, length)
    assert bytes(pinned) == DATA[offset:offset + length]
    assert bytes(unpinned) == DATA[offset:offset + length]


async def test_stream_hands_over_bounded_chunks(backend: Backend) -> None:
    key = backend.put(_name(), DATA)
    async with backend.make(chunk_size=4096) as store:
        version = (await store.read_tail(key, 100)).info.version
        chunks = [c async for c in store.stream_range(key, 1000, 90_000, version)]
    assert b"".join(chunks) == DATA[1000:91_000]
    assert len(chunks) >= 90_000 // 4096
    assert max(map(len, chunks)) <= 4096


async def test_zero_length_range(backend: Backend) -> None:
    key = backend.put(_name(), DATA)
    async with backend.make() as store:
        assert bytes(await store.read_range(key, 500, 0)) == b""


async def test_range_beyond_the_end_is_truncated(backend: Backend) -> None:
    key = backend.put(_name(), DATA)
    async with backend.make() as store:
        version = (await store.read_tail(key, 100)).info.version
        with pytest.raises(TruncatedError):
            await store.read_range(key, SIZE - 10, 20, version)
        with pytest.raises(TruncatedError):
            await store.read_range(key, SIZE + 10, 5)


async def test_negative_range_is_refused(backend: Backend) -> None:
    key = backend.put(_name(), DATA)
    async with backend.make() as store:
        with pytest.raises(StoreError):
            await store.read_range(key, -1, 5)


async def test_missing_object_is_not_found_and_named(backend: Backend) -> None:
    name = _name("missing.csup")
    key = backend.key(name)
    async with backend.make() as store:
        for call in (lambda: store.read_tail(key, 100), lambda: store.read_range(key, 0, 10),
                     lambda: store.info(key)):
            with pytest.raises(NotFoundError) as info:
                await call()
            assert "missing.csup" in str(info.value)
            assert info.value.path is not None and "missing.csup" in info.value.path


@pytest.mark.parametrize("same_size", [True, False])
async def test_replaced_object_is_detected(backend: Backend, same_size: bool) -> None:
    name = _name()
    key = backend.put(name, DATA)
    async with backend.make() as store:
        tail = await store.read_tail(key, 1000)
        backend.put(name, os.urandom(SIZE if same_size else SIZE + 7))
        with pytest.raises(ObjectChangedError) as info:
            await store.read_range(key, 0, 1000, tail.info.version)
        assert name in str(info.value)
        with pytest.raises(ObjectChangedError):
            async with aclosing(store.stream_range(key, 0, 1000, tail.info.version)) as s:
                async for _ in s:
                    pass
        # A new tail read sees the new object and its reads succeed again.
        fresh = await store.read_tail(key, 1000)
        assert fresh.info.version != tail.info.version
        assert len(await store.read_range(key, 0, 1000, fresh.info.version)) == 1000


async def test_store_is_reusable_across_keys(backend: Backend) -> None:
    keys = [backend.put(_name(f"{i}.bin"), DATA[i * 100:]) for i in range(3)]
    async with backend.make() as store:
        for i, key in enumerate(keys):
            tail = await store.read_tail(key, 50)
            assert tail.data == DATA[-50:]
            assert tail.info.size == SIZE - i * 100


# ------------------------------------------------- configuration from env ---
async def test_s3_credentials_and_endpoint_from_the_environment(
        moto_s3: servers.MotoS3, monkeypatch: pytest.MonkeyPatch) -> None:
    key = moto_s3.put(_name(), DATA)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_s3.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto_s3.ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto_s3.SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", moto_s3.REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    store, k = store_for(f"s3://{key}")
    async with store:
        assert isinstance(store, S3Store) and store.path_style
        assert (await store.read_tail(k, 10)).data == DATA[-10:]


async def test_gcs_emulator_host_from_the_environment(
        gcs_emulator: servers.GcsEmulator, monkeypatch: pytest.MonkeyPatch) -> None:
    key = gcs_emulator.put(_name(), DATA)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator.host)
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "not-for-the-emulator")
    async with GCSStore() as store:
        assert store.endpoint == gcs_emulator.endpoint
        assert "not-for-the-emulator" not in repr(store) and "anonymous" in repr(store)
        assert (await store.read_tail(f"gs://{key}", 10)).data == DATA[-10:]


@pytest.mark.parametrize("chunk_size", [1, 1000, 4096, 1 << 20])
async def test_tail_is_exact_immutable_bytes_however_the_body_is_chunked(
        range_server: servers.RangeServer, chunk_size: int) -> None:
    """A tail read arriving in many pieces, or in one, is the object's last bytes as bytes."""
    key = range_server.put(_name(), DATA)
    async with HTTPStore(chunk_size=chunk_size) as store:
        tail = await store.read_tail(range_server.url(key), 4096)
    assert type(tail.data) is bytes
    assert tail.data == DATA[-4096:] and tail.offset == SIZE - 4096
