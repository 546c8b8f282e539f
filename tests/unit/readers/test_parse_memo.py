"""open() without a metadata cache parses a reassembly section it has parsed before only
once per process: the parse is a pure function of the bytes this open read."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import csup_async
from csup_async.readers import loading as loading_mod
from csup_async.readers.parsememo import MAX_SECTION, ParseMemo, parse_memo


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
