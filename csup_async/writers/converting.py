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

import io
import os
from typing import Any

from ..format.bsup import split_tagged
from ..format.superdb import bsup2
from ..model.errors import ArgumentError, CsupError
from ..model.values import Value
from ..stores.tasks import run_to_end
from .inputs import bsup_version, kind_of, read_values
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
    from .targets import resolve

    target = resolve(options.get("target")).name
    try:
        kind = kind_of(src)
    except CsupError as e:
        raise e.with_path(src) from None
    if copy:
        if kind not in ("csup", "bsup"):
            raise ArgumentError(f"copy=True writes a CSUP or BSUP file as it is, not a "
                                f"{kind} file (leave copy out to convert it)", path=src)
        if writer_opts or "target" in options:
            given = writer_opts + (["target"] if "target" in options else [])
            raise ArgumentError(f"copy=True writes the file as it is: "
                                f"{', '.join(given)} cannot apply", path=src)
        return _copy(src, dest, store, if_absent, options, layout=None)
    if kind == "csup" and not writer_opts and "://" not in src:
        # already in the layout asked for (the default target's, or target=): a copy
        n = _copy(src, dest, store, if_absent, options, layout=target)
        if n is not None:
            return n
    if kind == "bsup" and options.get("target") in EXACT_TARGETS and \
            set(writer_opts) <= {"target"}:
        return _exact(src, dest, store, if_absent, options)
    return write(dest, read_values(src), fuse=fuse, infer_times=infer_times, store=store,
                 if_absent=if_absent, **options)


#: Targets a BSUP file's values go to as they are read (not through this library's
#: layout, which has no optional fields or fusion types: SuperDB's BSUP may hold both).
EXACT_TARGETS = ("super-0.3", "zed-1.12")


def _exact(src: str, dest: str | os.PathLike[str], store: Any, if_absent: bool,
           options: dict[str, Any]) -> int:
    """A BSUP file's exact values written in a target's layout, then put at ``dest``."""
    from .targets.output import write_csup

    buf = io.BytesIO()
    try:
        n = write_csup(buf, exact_values(src), options["target"])
    except CsupError as e:
        raise e.with_path(src) from None
    store_opts = {k: v for k, v in options.items() if k not in WRITER_OPTIONS
                  and k != "target"}
    write_bytes(dest, buf.getvalue(), store=store, if_absent=if_absent, **store_opts)
    return n


def exact_values(src: str) -> Any:
    """The values of a BSUP file; in SuperDB's versions 1 and 2 a top-level fusion
    value as ``Value(fusion type, Value(its subtype, the supertype's value))``, so
    its subtype is written as it was (field order and all), not derived."""
    with open(src.removeprefix("file://"), "rb") as f:
        data = f.read()
    version = bsup_version(data)
    if version not in (1, 2):
        return read_values(src)
    d = bsup2.V1 if version == 1 else bsup2.V2
    out = []
    for t, body in bsup2.read_values(data, d):
        if isinstance(t, bsup2.FusionType) and body is not None:
            parts = split_tagged(body)
            if len(parts) == 2 and parts[1] is not None:
                sub = bsup2.decode_type_value(parts[1], d)
                sv = bsup2.decode_value(t.inner, parts[0], typed=True, dialect=d)
                out.append(Value(t, Value(sub, sv)))
                continue
        out.append(Value(t, bsup2.decode_value(t, body, typed=True, dialect=d)))
    return out


def _copy(src: str, dest: str | os.PathLike[str], store: Any, if_absent: bool,
          options: dict[str, Any], layout: str | None) -> Any:
    """Put ``src``'s bytes at ``dest`` once ``open`` has read its metadata; the rows.
    ``layout``: None (nothing written) unless the file is in that target's layout."""
    if "://" in src and not src.startswith("file://"):
        raise ArgumentError("copy takes a local file (to copy an object, read it with "
                            "csup_async.open)", path=src)
    rows = run_to_end(lambda: _check(src, layout))
    if rows is None:
        return None

    options = {k: v for k, v in options.items() if k != "target"}
    with open(src.removeprefix("file://"), "rb") as f:
        data = f.read()
    write_bytes(dest, data, store=store, if_absent=if_absent, **options)
    return rows


async def _check(src: str, layout: str | None) -> int | None:
    from ..readers.opening import open as open_csup

    async with open_csup(src) as r:
        if layout is not None and layout_of(r) != layout:
            return None
        return int(r.num_rows)


def layout_of(reader: Any) -> str | None:
    """The target whose layout an open file has (``csup-async``, ``super`` for CSUP
    v23, ``super-0.3`` for v16, ``zed-1.12`` for VNG), or None (BSUP, older layouts)."""
    if getattr(reader, "bsup", False):
        return None
    meta = getattr(reader, "meta", None)
    if not getattr(reader, "header_layout", False):
        kind = getattr(getattr(meta, "trailer", None), "type", None)
        return {"csup": "csup-async", "vng": "zed-1.12"}.get(kind)  # type: ignore[arg-type]
    version = getattr(meta, "version", 0)
    return {23: "super", 16: "super-0.3"}.get(version)
