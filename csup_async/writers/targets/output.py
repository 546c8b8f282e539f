"""Writing values for a target: its columnar layout, its BSUP version.

Every input path of ``csup_async.write`` (Python rows, Arrow, numpy) ends in one
writer core (:func:`csup_async.writers.v23cols.open_writer`): this library's own,
or for ``super`` the CSUP v23 writer fed the same column batches.  For
``super-0.3`` and ``zed-1.12`` the values the library's writer wrote are read back
as exact ``Value``s and written again in the target's layout (:func:`transcoder`):
one shredding path for every input, at the price of a temporary file of the
library's own layout (removed afterwards).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from ...model.errors import CsupError, EncodeError
from ...model.types import Type
from ...model.values import Value, infer_type
from ...stores.tasks import run_to_end
from . import Target, resolve, v23_writer

__all__ = ["transcoder", "write_bsup", "write_csup", "file_values"]


def _pairs(values: Iterable[Any]) -> Iterator[tuple[Type, Any]]:
    for v in values:
        if isinstance(v, Value):
            yield v.type, v.value
        else:
            yield infer_type(v), v


def _zed_values(values: Iterable[Any]) -> Iterator[tuple[Type, Any]]:
    """Values with their unions in the order Zed's tools intern them (:mod:`.canon`)."""
    from .canon import sort_unions

    for t, v in _pairs(values):
        yield sort_unions(t, v)


def _super_values(values: Iterable[Any]) -> Iterator[tuple[Type, Any]]:
    """Values as SuperDB holds them (:func:`.supermodel.for_super`)."""
    from .supermodel import for_super

    for t, v in _pairs(values):
        yield for_super(t, v)


def _need_v23(target: Target) -> Any:
    mod = v23_writer()
    if mod is None:
        raise EncodeError(f"target {target.name!r} ({target.csup}) is not available in this "
                          "build yet; use target='super-0.3', 'zed-1.12' or 'csup-async'")
    return mod


def write_csup(out: BinaryIO, values: Iterable[Any], target: str | Target) -> int:
    """Write values (``Value``s or Python values) in ``target``'s columnar layout to
    ``out``; return how many.  Not for ``csup-async`` (that is ``csup_async.write``)."""
    t = resolve(target)
    if t.name == "super-0.3":
        from .csup16 import write_csup16

        return write_csup16(out, _super_values(values))
    if t.name == "zed-1.12":
        from .vng3 import write_vng3

        return write_vng3(out, _zed_values(values))
    if t.name == "super":  # super main's writer takes this library's model as it is
        mod = _need_v23(t)
        vals = [Value(ty, v) for ty, v in _pairs(values)]
        mod.write_values(out, vals)  # type: ignore[attr-defined]
        return len(vals)
    raise EncodeError(f"target {t.name!r} is written by csup_async.write itself")


def write_bsup(out: BinaryIO, values: Iterable[Any], target: str | Target | None = None,
               *, compress: bool = True) -> int:
    """Write values as one BSUP stream of the version ``target``'s tool reads (0 for
    ``csup-async`` and ``zed-1.12``, 2 for ``super-0.3``, 5 for ``super``)."""
    t = resolve(target)
    n = 0
    if t.bsup_version == 0:
        from ...format.bsup import StreamEncoder, encode_value

        enc = StreamEncoder(out, compress=compress)
        pairs = _zed_values(values) if t.name == "zed-1.12" else _pairs(values)
        for ty, v in pairs:
            enc.write_body(ty, encode_value(ty, v))
            n += 1
        enc.end_stream()
        return n
    if t.bsup_version in (1, 2):
        from .bsupn import StreamEncoderN

        encn = StreamEncoderN(out, t.bsup_version, compress=compress)
        for ty, v in _super_values(values):
            encn.write(ty, v)
            n += 1
        encn.end_stream()
        return n
    from ...format.superdb.bsup5w import encode_bsup5
    from .supermodel import normal_sets, to_super  # (no typed nulls in BSUP 5 either)

    vals = []
    for ty, v in _pairs(values):
        st, sv = to_super(ty, v)
        vals.append(Value(st, normal_sets(st, sv)))  # sets unique (super refuses others)
    out.write(encode_bsup5(vals))
    return len(vals)


def file_values(path: str) -> list[Value]:
    """Every value of a local file of this library's layout, exact (``read_values``)."""
    from ...readers.opening import open as open_file

    async def read() -> list[Value]:
        async with open_file(path) as r:
            return list(await r.read_values())

    return run_to_end(read, "csup-target")


def transcoder(write_to: Callable[..., int], target: str | Target) -> Callable[..., int]:
    """``write_to(f, **options)`` of ``csup_async.write``, writing ``target``'s layout:
    this library's layout to a temporary file, read back, written again.  The
    options of this library's layout (thresholds, statistics) do not apply."""
    t = resolve(target)
    if t.name == "csup-async":
        return write_to
    if t.name == "super":  # written from the column batches directly (v23cols)
        return lambda f, **options: write_to(f, target=t.name, **options)

    def run(f: BinaryIO, **options: Any) -> int:
        fd, tmp = tempfile.mkstemp(suffix=".csup", prefix="csup-target-")
        try:
            with os.fdopen(fd, "wb") as g:
                opts = {k: v for k, v in options.items() if k == "compress"}
                write_to(g, statistics=False, **opts)
            try:
                values = file_values(tmp)
            except CsupError as e:
                raise EncodeError(f"reading back for target {t.name}: {e.message}") from None
            return write_csup(f, values, t)
        finally:
            os.unlink(tmp)

    return run
