"""A local scan reads straight into its request buffers (``LocalStore.fill_range``).

The bytes must be the file's, reported as they arrive, and a file that shrank or
changed since its metadata was read must still fail with the path named.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import csup_async
from csup_async.model.errors import ObjectChangedError, TruncatedError
from csup_async.stores import local
from csup_async.stores.local import LocalStore

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


pa = pytest.importorskip("pyarrow")


async def _fill(store: LocalStore, key: str, offset: int, n: int,
                version: str | None = None) -> tuple[bytes, list[int]]:
    buf = bytearray(n)
    seen = [got async for got in store.fill_range(key, offset, memoryview(buf), version)]
    return bytes(buf), seen


async def test_fill_range_reads_the_files_bytes_in_steps(tmp_path: Path, monkeypatch):
    data = np.random.default_rng(1).bytes(1_000_003)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    monkeypatch.setattr(local, "FILL_STEP", 300_000)
    got, seen = await _fill(LocalStore(), str(path), 17, 999_000)
    assert got == data[17:17 + 999_000]
    assert seen == [300_000, 600_000, 900_000, 999_000]


async def test_fill_range_names_a_file_that_changed_or_shrank(tmp_path: Path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 1000)
    store = LocalStore()
    tail = await store.read_tail(str(path), 10)
    with pytest.raises(TruncatedError, match=r"f\.bin"):
        await _fill(store, str(path), 900, 200)
    os.truncate(path, 500)
    with pytest.raises(ObjectChangedError, match=r"f\.bin"):
        await _fill(store, str(path), 0, 100, tail.info.version)


async def test_local_scan_equals_the_written_table(tmp_path: Path, monkeypatch):
    """Through the reader: several requests, each filled in several steps."""
    monkeypatch.setattr(local, "FILL_STEP", 64 << 10)
    rng = np.random.default_rng(2)
    cols = {"a": rng.integers(-1 << 40, 1 << 40, 300_000), "b": rng.random(300_000),
            "s": np.array([f"v{i % 977}" for i in range(300_000)])}
    path = tmp_path / "t.csup"
    csup_async.write(str(path), pa.table(cols), segment_thresh=128 << 10)
    async with csup_async.open(str(path)) as r:
        res = await r.scan(["a", "b", "s"])
        assert res.stats.bytes_read > 4 * (64 << 10)
    t = res.to_arrow()
    assert t.column("a").to_pylist() == cols["a"].tolist()
    assert t.column("b").to_pylist() == cols["b"].tolist()
    assert t.column("s").to_pylist() == cols["s"].tolist()
