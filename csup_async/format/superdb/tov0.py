"""BSUP versions 1 and 2 (``super`` v0.2.0 / v0.3.0) as version 0, for the row readers.

A SuperDB database keeps its journals, commits and data objects in the BSUP version
its ``super`` writes; this library's BSUP object reader (and the lake's record
readers) read version 0.  The values are the same super data model (SuperDB's
values have no typed nulls, which version 0 can say), so each value is decoded in
its dialect and encoded again in version 0, stream by stream (a seek-index chunk
of a data object is a stream of its own, and stays one).  What version 0 cannot
say (optional fields, fusion types) is a FormatError naming it.
"""

from __future__ import annotations

import importlib

from ...model.errors import FormatError
from ..bsup import StreamEncoder, encode_value
from .bsup2 import (
    V1,
    V2,
    FusionType,
    OptField,
    Types,
    decode_value,
    frame_values,
    frames,
)

__all__ = ["NoV0Form", "bsup_version", "to_v0"]


class NoV0Form(FormatError):
    """A value version 0 cannot say (an optional field, a fusion type): the stream is
    read in its own version instead, where a reader can (``open()``)."""


def _v5_to_v0(data: bytes | memoryview) -> bytes:
    """BSUP version 5 (super main) through its reader (:mod:`.bsup5`, when this build
    has it), as one version-0 stream."""
    try:
        b5 = importlib.import_module(__package__ + ".bsup5")
    except ImportError:
        raise FormatError("BSUP version 5 (super main) is not read by this build") from None
    out = bytearray()
    enc = StreamEncoder(out, compress=False)
    checked: set[int] = set()
    for t, body in b5.read_values(data):
        _v0_able(t, checked)
        enc.write_body(t, encode_value(t, b5.decode_value(t, body, typed=True)))
    enc.end_stream()
    return bytes(out)


def bsup_version(data: bytes | memoryview) -> int:
    """The BSUP version of a stream by its first byte: 0 for version 0 (whose frame
    headers have the high bit clear, or an empty stream), else the version byte's."""
    if not data:
        return 0
    b = data[0]
    if b == 0xFF or not b & 0x80:
        return 0
    return b & 0x7F


def _v0_able(t: object, seen: set[int]) -> None:
    if id(t) in seen:
        return
    seen.add(id(t))
    if isinstance(t, FusionType):
        raise NoV0Form("a fusion type value (super's fuse) has no version-0 form")
    for f in getattr(t, "fields", ()):
        if isinstance(f, OptField):
            raise NoV0Form(f"optional field {f.name!r} has no version-0 form")
        _v0_able(f.type, seen)
    for attr in ("inner", "elem", "key", "value"):
        c = getattr(t, attr, None)
        if c is not None:
            _v0_able(c, seen)
    for m in getattr(t, "types", ()):
        _v0_able(m, seen)


def to_v0(data: bytes | memoryview) -> bytes:
    """``data`` (whole streams of BSUP version 1 or 2) as version-0 streams."""
    version = bsup_version(data)
    if version == 0:
        return bytes(data)
    if version == 5:
        return _v5_to_v0(data)
    if version not in (1, 2):
        raise FormatError(f"BSUP version {version} is not read here (versions 0, 1 and 2 are)")
    d = V1 if version == 1 else V2
    out = bytearray()
    enc = StreamEncoder(out, compress=False)
    types = Types(d)
    checked: set[int] = set()
    open_stream = False
    for kind, payload in frames(data, d):
        if kind == -1:
            enc.end_stream()
            types = Types(d)
            open_stream = False
            continue
        assert payload is not None
        open_stream = True
        if kind == 0:
            types.parse(payload)
        elif kind == 1:
            for t, body in frame_values(payload, types.lookup):
                _v0_able(t, checked)
                v = decode_value(t, body, typed=True, dialect=d)
                enc.write_body(t, encode_value(t, v))
    if open_stream:
        enc.end_stream()
    return bytes(out)
