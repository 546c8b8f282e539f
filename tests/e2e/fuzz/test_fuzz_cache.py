"""Damaged and hostile on-disk metadata-cache entries (issue #39 item 8).

A family of mutations of a real entry (one a real open wrote): a flipped bit anywhere
(magic, header, tail bytes, checksum), a cut, bytes appended, and hostile headers that
carry a valid checksum (``"size": 1e999``, a header nested 100,000 deep, lengths past
the file, wrong types).  For each, a fresh process's view of the directory (a new
``DiskMetadataCache``, nothing in memory) opens the object with ``immutable=True``:
it must read exactly the object's values, the damaged entry must be dropped (the open
reads the store again) and written anew, and nothing but the values comes out: no
exception of any kind.

Size: 25 random flips per run, or ``CSUP_FUZZ_EXAMPLES``; the hostile headers always.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import DiskMetadataCache

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


EXAMPLES = int(os.environ.get("CSUP_FUZZ_EXAMPLES") or 25)
ROWS = [{"id": i, "name": f"n{i * 31 % 1009}", "x": i / 7} for i in range(2000)]
MAGIC_LEN, LEN = 8, struct.Struct("<I")


@pytest.fixture(scope="module")
def obj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("cachefuzz") / "obj.csup"
    csup_async.write(p, ROWS)
    return p


async def _open(path: Path, cache_dir: Path) -> tuple[list[Any], int]:
    cache = DiskMetadataCache(cache_dir)  # a new process's view: nothing in memory
    async with csup_async.open(str(path), metadata_cache=cache, immutable=True) as r:
        rows = (await r.scan()).to_pylist()
        return rows, r.open_stats.requests


def _entry(obj: Path, cache_dir: Path) -> Path:
    rows, requests = asyncio.run(_open(obj, cache_dir))
    assert rows == ROWS and requests >= 1
    (entry,) = cache_dir.glob("*.csupmeta")
    return entry


def _check(obj: Path, cache_dir: Path, entry: Path, damaged: bytes) -> None:
    entry.write_bytes(damaged)
    rows, requests = asyncio.run(_open(obj, cache_dir))
    assert rows == ROWS, "a damaged entry never changes the values read"
    assert requests >= 1, "the damaged entry was not used: the store was read again"
    fresh = entry.read_bytes()
    assert fresh != damaged, "the damaged entry was dropped and written anew"
    again, requests = asyncio.run(_open(obj, cache_dir))
    assert again == ROWS and requests == 0, "the new entry answers"


def _sealed(body: bytes) -> bytes:
    """``body`` with the checksum a whole entry ends with (a hostile entry, not a
    damaged one: the checksum alone does not refuse it)."""
    return body + hashlib.sha256(body).digest()


def _with_header(good: bytes, edit: Any) -> bytes:
    """``good`` with its JSON header replaced by ``edit(header)`` (bytes or a dict)."""
    body = good[:-32]
    (n,) = LEN.unpack_from(body, MAGIC_LEN)
    head = json.loads(body[MAGIC_LEN + LEN.size: MAGIC_LEN + LEN.size + n])
    new = edit(head)
    raw = new if isinstance(new, bytes) else json.dumps(new).encode()
    return _sealed(body[:MAGIC_LEN] + LEN.pack(len(raw)) + raw
                   + body[MAGIC_LEN + LEN.size + n:])


def _set(**fields: Any) -> Any:
    return lambda h: {**h, **fields}


HOSTILE: dict[str, Any] = {
    "size 1e999": lambda h: json.dumps({**h, "size": 0}).replace('"size": 0',
                                                                  '"size": 1e999').encode(),
    "size -1": _set(size=-1),
    "size a string": _set(size="12"),
    "size a bool": _set(size=True),
    "nested 100000 deep": lambda h: b"[" * 100_000 + b"]" * 100_000,
    "nested in a field": lambda h: json.dumps({**h, "parts": 0}).replace(
        '"parts": 0', '"parts": ' + "[" * 100_000 + "]" * 100_000).encode(),
    "not an object": lambda h: b"[1, 2, 3]",
    "no key": lambda h: {k: v for k, v in h.items() if k != "key"},
    "another key": _set(key="0" * 64),
    "version a number": _set(version=7),
    "a part past the file": lambda h: {**h, "parts": [[p[0], p[1] + 10**9]
                                                      for p in h["parts"]]},
    "a part of 2**80 bytes": lambda h: {**h, "parts": [[p[0], 2**80] for p in h["parts"]]},
    "a part at 1e999": lambda h: json.dumps({**h, "parts": [[0, 1]]}).replace(
        "[[0, 1]]", "[[1e999, 1]]").encode(),
    "parts not pairs": _set(parts=[[1, 2, 3]]),
    "no parts": _set(parts=[]),
    "header not json": lambda h: b"\xff\xfe{",
    "header length past the file": None,  # built below
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_entry_is_dropped_and_read_again(obj: Path, tmp_path: Path,
                                                   name: str) -> None:
    entry = _entry(obj, tmp_path / "c")
    good = entry.read_bytes()
    if HOSTILE[name] is None:
        body = good[:-32]
        damaged = _sealed(body[:MAGIC_LEN] + LEN.pack(2**32 - 1) + body[MAGIC_LEN + LEN.size:])
    else:
        damaged = _with_header(good, HOSTILE[name])
    _check(obj, tmp_path / "c", entry, damaged)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_flipped_bit_anywhere_is_detected(obj: Path, tmp_path_factory: pytest.TempPathFactory,
                                            data: st.DataObject) -> None:
    cache_dir = tmp_path_factory.mktemp("flip")
    entry = _entry(obj, cache_dir)
    good = entry.read_bytes()
    # a third of the cases in the tail bytes, where a flip changes the values read
    body_start = MAGIC_LEN + LEN.size + LEN.unpack_from(good, MAGIC_LEN)[0]
    lo = data.draw(st.sampled_from([0, body_start]), label="region")
    pos = data.draw(st.integers(lo, len(good) - 1), label="byte")
    bit = data.draw(st.integers(0, 7), label="bit")
    damaged = bytearray(good)
    damaged[pos] ^= 1 << bit
    _check(obj, cache_dir, entry, bytes(damaged))


@pytest.mark.parametrize("how", ["cut to 0", "cut in the magic", "cut in the header",
                                 "cut in the tail", "cut the checksum", "one byte more",
                                 "the old format"])
def test_a_cut_or_lengthened_entry_is_dropped(obj: Path, tmp_path: Path, how: str) -> None:
    entry = _entry(obj, tmp_path / "c")
    good = entry.read_bytes()
    damaged = {"cut to 0": b"", "cut in the magic": good[:5], "cut in the header": good[:20],
               "cut in the tail": good[:len(good) // 2], "cut the checksum": good[:-32],
               "one byte more": good + b"\0",
               "the old format": b"CSUPMC1\n" + good[MAGIC_LEN:-32]}[how]
    _check(obj, tmp_path / "c", entry, damaged)


def test_a_flipped_tail_bit_with_its_checksum_recomputed_is_still_checked(
        obj: Path, tmp_path: Path) -> None:
    """Past the checksum (a hostile entry), the tail bytes still meet the CSUP parser's
    own checks or the values' checksums; a flip that slips through all of them reads
    the object's values or raises a CsupError, never another exception."""
    entry = _entry(obj, tmp_path / "c")
    good = entry.read_bytes()
    body = bytearray(good[:-32])
    body[-40] ^= 0x10  # in the trailer's reassembly section
    entry.write_bytes(_sealed(bytes(body)))
    try:
        rows, _ = asyncio.run(_open(obj, tmp_path / "c"))
    except csup_async.CsupError:
        return
    assert isinstance(rows, list)
