"""open() without a metadata cache parses a reassembly section it has parsed before only
once per process: the parse is a pure function of the bytes this open read."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import csup_async
from csup_async.readers import loading as loading_mod
from csup_async.readers.parsememo import MAX_SECTION, ParseMemo, parse_memo

#: About this library's own layout (its reassembly section, parsed once): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


def _write(path: Path, start: int, rows: int = 2000) -> None:
    out = io.BytesIO()
    csup_async.write(out, pa.table({"id": list(range(start, start + rows)),
                                    "s": [f"v{i}" for i in range(start, start + rows)]}))
    path.write_bytes(out.getvalue())


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    real = loading_mod.parse_reassembly

    def spy(*args: Any, **kw: Any) -> Any:
        seen.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(loading_mod, "parse_reassembly", spy)
    return seen


async def _ids(path: Path, **kw: Any) -> list[int]:
    async with csup_async.open(str(path), **kw) as r:
        return (await r.scan(["id", "s"])).column("id").to_pylist()


async def test_the_same_bytes_are_parsed_once(tmp_path: Path, parses: list[int]) -> None:
    p = tmp_path / "a.csup"
    _write(p, 0)
    for _ in range(4):
        assert await _ids(p) == list(range(2000))
    assert len(parses) == 1


async def test_a_replaced_object_is_parsed_again_and_read_right(tmp_path: Path,
                                                                  parses: list[int]) -> None:
    p = tmp_path / "a.csup"
    _write(p, 0)
    assert await _ids(p) == list(range(2000))
    _write(p, 10, rows=3000)  # new rows and segments: a new section
    assert await _ids(p) == list(range(10, 3010))
    assert len(parses) == 2
    q = tmp_path / "b.csup"
    _write(q, 0)  # another name, the same bytes: the same metadata
    assert await _ids(q) == list(range(2000))
    assert len(parses) == 2


async def test_a_metadata_cache_keeps_its_own_rules(tmp_path: Path,
                                                      parses: list[int]) -> None:
    """With a metadata cache the cache decides (by version); the memo is not consulted."""
    p = tmp_path / "a.csup"
    _write(p, 0)
    cache = csup_async.MetadataCache()
    for _ in range(3):
        assert await _ids(p, metadata_cache=cache) == list(range(2000))
    assert len(parses) == 1 and len(parse_memo()) == 0


def test_the_memo_is_bounded() -> None:
    memo = ParseMemo(max_bytes=100_000)
    for i in range(100):
        key = memo.key(bytes([i]) * 5000, "t", 1, 2)
        memo.put(key, object())
    assert 0 < len(memo) <= 100_000 // 25_000
    assert memo.get(memo.key(bytes([99]) * 5000, "t", 1, 2)) is not None  # the newest stays
    assert memo.get(memo.key(bytes([0]) * 5000, "t", 1, 2)) is None  # the oldest went
    assert memo.key(b"x" * (MAX_SECTION + 1), "t", 1, 2) is None  # too large to keep


def _big(path: Path, seed: int, rows: int = 400_000) -> None:
    rng = np.random.default_rng(seed)
    out = io.BytesIO()
    csup_async.write(out, pa.table({"id": rng.integers(0, 1 << 60, rows),
                                    "f": rng.random(rows)}))
    path.write_bytes(out.getvalue())


async def test_a_large_object_opened_again_reads_only_its_metadata_first(
        tmp_path: Path) -> None:
    """The first open reads the profile's tail (1 MiB on s3); the next one of the same
    object only what its metadata took then (at least tail_min)."""
    p = tmp_path / "big.csup"
    _big(p, 1)
    got = []
    for _ in range(2):
        async with csup_async.open(str(p), profile="s3") as r:
            got.append((r.open_stats.bytes_read, r.open_stats.requests,
                        (await r.scan(["id"])).column("id").to_pylist()[:5]))
    assert got[0][0] == 1 << 20 and got[1][0] == 64 << 10
    assert got[0][1:] == got[1][1:] and got[1][1] == 1


async def test_a_replaced_object_with_more_metadata_reads_it_right(tmp_path: Path) -> None:
    """A remembered size that is too small now costs one more request, never a wrong read."""
    p = tmp_path / "big.csup"
    _big(p, 1, rows=300_000)
    async with csup_async.open(str(p), profile="s3") as r:
        assert (await r.scan(["id"])).num_rows == 300_000
    rng = np.random.default_rng(2)
    out = io.BytesIO()  # many small segments: metadata far past 64 KiB
    table = pa.table({f"c{i}": rng.random(300_000) for i in range(8)})
    csup_async.write(out, table, segment_thresh=1 << 12)
    p.write_bytes(out.getvalue())
    async with csup_async.open(str(p), profile="s3") as r:
        assert r.meta.trailer.reassembly_size > 64 << 10
        assert r.open_stats.requests == 2  # the short tail, then the rest of the metadata
        assert (await r.scan(["c7"])).column("c7").to_pylist() == table["c7"].to_pylist()
