"""CSUP v23 (super main) files cut short, flipped and lied about: every damaged file is
refused with a CsupError naming the file, or read (a flip the format cannot see) -- never
another exception, a hang, or an allocation the bytes do not pay for."""

from __future__ import annotations

import asyncio
import random
import struct
from pathlib import Path

import pytest

import csup_async
from csup_async import CsupError

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super-main"
SAMPLES = ["fusion", "optional", "unions", "nested", "named", "recursive", "parts", "dicts"]


async def _read_all(path: Path) -> None:
    async with csup_async.open(str(path)) as r:
        await r.read_values()
        await r.scan()


def outcome(path: Path) -> str:
    """``ok`` or ``refused``; anything but a CsupError naming the file fails the test."""
    try:
        asyncio.run(asyncio.wait_for(_read_all(path), 20))
    except CsupError as e:
        assert str(path) in str(e) or path.name in str(e), f"{e!r} does not name the file"
        return "refused"
    return "ok"


@pytest.mark.parametrize("sample", ["fusion", "optional", "recursive", "parts"])
def test_every_truncation_is_refused(tmp_path, sample):
    data = (DATA / f"{sample}.csup").read_bytes()
    p = tmp_path / "t.csup"
    step = max(1, len(data) // 400)
    for n in range(1, len(data), step):
        p.write_bytes(data[:n])
        assert outcome(p) == "refused", n


@pytest.mark.parametrize("sample", SAMPLES)
def test_random_flips_are_refused_or_read(tmp_path, sample):
    data = (DATA / f"{sample}.csup").read_bytes()
    rnd = random.Random(f"v23-{sample}")
    p = tmp_path / "f.csup"
    for _ in range(60):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
        p.write_bytes(bytes(b))
        outcome(p)


def _object_header_at(data: bytes, off: int = 0) -> tuple[int, int, int, int]:
    return struct.unpack_from("<QQQI", data, off + 9)


def test_lying_sizes_are_refused_within_caps(tmp_path):
    data = bytearray((DATA / "nested.csup").read_bytes())
    p = tmp_path / "l.csup"
    cases = []
    # a trailer claiming a part bigger than the file, or a huge footer type
    for part, tsize in ((len(data) * 1000, None), (None, 1 << 31)):
        b = bytearray(data)
        if part is not None:
            struct.pack_into("<Q", b, len(b) - 16, part)
        if tsize is not None:
            struct.pack_into("<I", b, len(b) - 8, tsize)
        cases.append(b)
    # an object header claiming 90 MB of metadata, or 2 GB of data
    for field, value in ((0, 90 << 20), (2, (2 << 30) - 1), (1, 1 << 40)):
        b = bytearray(data)
        struct.pack_into("<Q", b, 9 + 8 * field, value)
        cases.append(b)
    for b in cases:
        p.write_bytes(bytes(b))
        assert outcome(p) == "refused"


def test_intcomp_headers_claiming_huge_counts_are_refused():
    from csup_async.format.superdb import intcomp
    from csup_async.model.errors import FormatError

    for width, words in ((32, [0xFFFFFFF0, 3, 0, 1]), (64, [(3 << 32) | 0xFFFFFFFF, 0, 1])):
        raw = struct.pack(f"<{len(words)}{'I' if width == 32 else 'Q'}", *words)
        with pytest.raises(FormatError):
            (intcomp.uint32s if width == 32 else intcomp.uint64s)(raw)
