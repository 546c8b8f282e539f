"""``csup_async.convert``: a file into a CSUP file or object, as ``csup-async convert`` does.

Three routes, chosen by what the conversion needs:

- JSON/NDJSON: the lines parsed in C into columns (:mod:`csup_async.writers.ndjson`), never a
  Python object per value; BSUP/ZNG and Parquet through the writer's paths for them;
- a CSUP file of this library's format with no writer option given (nothing to change
  in it): its bytes as they are, once checked (every segment it has is a segment the
  output would keep) — the same values and super types a re-encoding writes, at the cost
  of a copy;
- ``copy=True``: any file ``csup_async.open`` reads (CSUP of either layout, BSUP),
  uploaded or copied as it is after its metadata is read: the way to put an existing
  file on a store.

Every route writes as ``csup_async.write`` does: a temporary name renamed into place
locally, one whole-object put on a store, ``if_absent`` honoured.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from typing import Any

from ..model.errors import ArgumentError, CsupError
from .inputs import kind_of, read_values
from .writing import WRITER_OPTIONS, write, write_bytes

__all__ = ["convert"]


def convert(source: str | os.PathLike[str], dest: str | os.PathLike[str], *,
            copy: bool = False, fuse: bool = True, infer_times: bool = False,
            store: Any = None, if_absent: bool = False, **options: Any) -> int:
    """Convert the file ``source`` (``.ndjson``/``.jsonl``/``.json``, ``.bsup``/``.zng``,
    ``.parquet``, ``.csup``) into one CSUP file at ``dest``; return the number of rows.

    ``dest``, ``store``, ``if_absent`` and the options (``segment_thresh``,
    ``skew_thresh``, ``compress``, ``statistics``, or a URL's store options) are
    :func:`csup_async.write`'s, as are ``fuse`` and ``infer_times`` (JSON input).
    ``copy=True`` writes ``source`` as it is, without re-encoding, after checking that
    :func:`csup_async.open` reads it (a CSUP or BSUP file; writer options are refused):
    an upload of an existing file.  A CSUP file of this library's own layout converted
    with no writer option is copied the same way (its values and types are what a
    re-encoding would write).
    """
    src = os.fspath(source)
    if not isinstance(src, str):
        raise ArgumentError(f"source must be a path, not {type(source).__name__}")
    writer_opts = sorted(k for k in options if k in WRITER_OPTIONS)
    if options.get("target") not in (None, "csup-async"):  # another tool's layout: re-encoded
        writer_opts.append("target")
    try:
        kind = kind_of(src)
    except CsupError as e:
        raise e.with_path(src) from None
    if copy:
        if kind not in ("csup", "bsup"):
            raise ArgumentError(f"copy=True writes a CSUP or BSUP file as it is, not a "
                                f"{kind} file (leave copy out to convert it)", path=src)
        if writer_opts:
            raise ArgumentError(f"copy=True writes the file as it is: "
                                f"{', '.join(writer_opts)} cannot apply", path=src)
        return _copy(src, dest, store, if_absent, options, own_only=False)
    if kind == "csup" and not writer_opts and "://" not in src:
        n = _copy(src, dest, store, if_absent, options, own_only=True)
        if n is not None:
            return n
    return write(dest, read_values(src), fuse=fuse, infer_times=infer_times, store=store,
                 if_absent=if_absent, **options)


def _copy(src: str, dest: str | os.PathLike[str], store: Any, if_absent: bool,
          options: dict[str, Any], own_only: bool) -> Any:
    """Put ``src``'s bytes at ``dest`` once ``open`` has read its metadata; the rows.
    ``own_only``: None (nothing written) unless it is this library's own CSUP layout."""
    if "://" in src and not src.startswith("file://"):
        raise ArgumentError("copy takes a local file (to copy an object, read it with "
                            "csup_async.open)", path=src)
    rows = asyncio.run(_check(src, own_only)) if not _in_loop() else _threaded(src, own_only)
    if rows is None:
        return None

    with open(src.removeprefix("file://"), "rb") as f:
        data = f.read()
    write_bytes(dest, data, store=store, if_absent=if_absent, **options)
    return rows


async def _check(src: str, own_only: bool) -> int | None:
    from ..readers.opening import open as open_csup

    async with open_csup(src) as r:
        # SuperDB's own layouts and BSUP are read by other readers, each marked
        if own_only and (getattr(r, "header_layout", False) or getattr(r, "bsup", False)):
            return None
        return int(r.num_rows)


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _threaded(src: str, own_only: bool) -> int | None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(_check(src, own_only))).result()
