"""Running one decode with the C kernels and with the numpy fallback, and comparing.

The kernels and the fallback are the same public functions (csup_async.decode.kernels
falls back per call when its module ``_K`` is None), so a test swaps ``_K`` under a
lock and runs the call twice.  Shared by the kernel tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from csup_async import decode as D
from csup_async.decode import kernels as K
from csup_async.model.errors import CsupError

#: The compiled module (None where it was not built).
NATIVE = K.native_module()


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except CsupError as e:
        return "error", (type(e), str(e))


def assert_same(a: Any, b: Any) -> None:
    """Equal as a user would check: dtypes, shapes and the bytes of every array."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    elif isinstance(a, D.Decoded):
        assert isinstance(b, D.Decoded)
        for x, y in ((a.values, b.values), (a.validity, b.validity), (a.offsets, b.offsets)):
            assert_same(x, y)
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert a == b


_NUMPY_LOCK = threading.Lock()


def both(fn: Callable[[], Any]) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """fn's outcome with the kernels and with numpy (same public function)."""
    with _NUMPY_LOCK:
        saved = K.set_native(NATIVE)
        try:
            native = outcome(fn)
            K.set_native(None)
            numpy = outcome(fn)
        finally:
            K.set_native(saved)
    return native, numpy


def check_agree(fn: Callable[[], Any]) -> str:
    native, numpy = both(fn)
    assert native[0] == numpy[0], (native, numpy)
    if native[0] == "ok":
        assert_same(native[1], numpy[1])
    else:
        assert native[1] == numpy[1]  # the very same error type and message
    return native[0]


def has_long_tag(data: bytes) -> bool:
    """Whether walking the stream meets a tag of 10 or more bytes (the kernels leave
    those to numpy)."""
    pos, n = 0, len(data)
    while pos < n:
        start = pos
        t = shift = 0
        while pos < n:
            b = data[pos]
            pos += 1
            t |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        if pos - start >= 10:
            return True
        pos += max(t - 1, 0)
    return False


def mutate(data: bytes, edits: list[tuple[float, int, str]], cut: int) -> bytes:
    out = bytearray(data)
    for where, byte, how in edits:
        i = int(where * len(out))
        if how == "set" and out:
            out[min(i, len(out) - 1)] = byte
        elif how == "insert":
            out[i:i] = bytes([byte])
        elif how == "delete" and out:
            del out[min(i, len(out) - 1)]
    return bytes(out[: max(len(out) - cut, 0)])


# tag-like bytes are more interesting than uniform ones
some_byte = st.one_of(st.integers(0, 12), st.integers(0, 255), st.sampled_from([0x7F, 0x80, 0xFF]))
edits = st.lists(st.tuples(st.floats(0, 1), some_byte,
                           st.sampled_from(["set", "insert", "delete"])), max_size=3)
