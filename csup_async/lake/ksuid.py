"""KSUIDs: the 20-byte IDs Zed names pools, commits and data objects with.

4 bytes big-endian seconds since 1400000000, then 16 random bytes; written as
27 base62 characters (0-9A-Za-z), left-padded with '0'.  A nil KSUID is 20
zero bytes (Zed writes it, never a null).
"""

from __future__ import annotations

import functools
import os
import re
import time

__all__ = ["NIL", "EPOCH", "new", "to_str", "parse", "looks_like"]

NIL = bytes(20)
EPOCH = 1_400_000_000
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_INDEX = {c: i for i, c in enumerate(_ALPHABET)}
_B62 = re.compile(r"^[0-9A-Za-z]{27}$")
_HEX = re.compile(r"^0x[0-9a-fA-F]{40}$")
_MAX = (1 << 160) - 1


def new(now: float | None = None) -> bytes:
    """A fresh KSUID (time-ordered to the second, random after)."""
    secs = int(time.time() if now is None else now) - EPOCH
    return secs.to_bytes(4, "big") + os.urandom(16)


@functools.lru_cache(maxsize=1 << 16)
def to_str(k: bytes) -> str:
    """The 27 base62 characters of a KSUID (cached: a pool names its objects often)."""
    n = int.from_bytes(k, "big")
    out = []
    while n:
        n, r = divmod(n, 62)
        out.append(_ALPHABET[r])
    return "".join(reversed(out)).rjust(27, "0")


def looks_like(s: str) -> bool:
    """Whether ``s`` is written as a KSUID (27 base62 chars, or 0x and 40 hex digits)."""
    return bool(_B62.match(s) or _HEX.match(s))


def parse(s: str) -> bytes:
    """The 20 bytes a KSUID string names (ValueError if it names none)."""
    if _HEX.match(s):
        return bytes.fromhex(s[2:])
    if not _B62.match(s):
        raise ValueError(f"{s!r} is not a KSUID")
    n = 0
    for c in s:
        n = n * 62 + _INDEX[c]
    if n > _MAX:
        raise ValueError(f"{s!r} is out of the KSUID range")
    return n.to_bytes(20, "big")
