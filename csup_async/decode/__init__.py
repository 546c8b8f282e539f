"""Decoders: column-stream bytes to numpy arrays.

A primitive column stream is a run of tag-encoded values (uvarint tag, 0 for
null, else body length + 1, then the body).  Where each value starts depends
on every tag before it, so finding the values is serial by nature, and a plain
Python loop manages only ~8 MB/s.  The public functions (:mod:`.kernels`) walk
it with C loops (``_kernels.c``, built at install where a compiler exists,
~1 GB/s and more per core, GIL released); without them, or with
``CSUP_ASYNC_NATIVE=0``, they are the numpy implementation, which finds the
values with numpy alone and is also the reference for every error message:

* constant stride: when every value has the same single-byte tag (float64 or
  bool without nulls) one strided comparison proves it (:mod:`.columns`);
* lockstep speculation (:mod:`.lanes`): many guessed starts followed together
  as vector operations, stitched where they meet, then checked (:mod:`.scan`);
* the serial scanner (:mod:`.tags`), the reference semantics: used for small
  streams, where speculation does not settle (periodic or adversarial data),
  and to find and describe errors.

Speculation only ever changes speed, never answers.  Every function raises
only :class:`~csup_async.model.errors.CsupError` subclasses, for any input bytes;
messages give stream offsets, and callers add the file path.  Inputs may be
bytes, bytearray or memoryview; decoded arrays never alias them, so a buffer
may be reused (the scanners work on one zero-padded copy of the stream, which
lets gathers run past its end).
"""

from __future__ import annotations

from .columns import DEFAULT_MAX_MEM_LENGTH, Decoded, decompress_segment
from .kernels import (
    ENV_VAR,
    ValueSlicer,
    compare_bytes,
    count_ranges,
    decode_bools,
    decode_floats,
    decode_int32s,
    decode_ints,
    decode_primitive,
    decode_varbinary,
    lengths_to_offsets,
    native_available,
    presence_to_validity,
    scan_tags,
    validate_utf8,
)

__all__ = [
    "DEFAULT_MAX_MEM_LENGTH", "ENV_VAR", "Decoded", "decompress_segment", "scan_tags",
    "decode_ints", "decode_floats", "decode_bools", "decode_varbinary", "validate_utf8",
    "decode_int32s", "presence_to_validity", "lengths_to_offsets", "decode_primitive",
    "native_available", "ValueSlicer", "count_ranges", "compare_bytes",
]
