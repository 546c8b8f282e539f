"""Zed's VNG columnar format (the trailer layout of Zed v1.4 to v1.12), read only.

:mod:`.metadata` turns a VNG object's metadata section into the same
``FileMeta`` a CSUP file gives, so opening, planning, coalescing, fetching and
decoding are this library's usual ones; :func:`csup_async.format.csup.find_trailer`
recognises the ``ZNG Trailer`` of type ``vng``.
"""

from .metadata import MAGIC, TYPE, VERSION, WriterInfo, parse_metadata

__all__ = ["MAGIC", "TYPE", "VERSION", "WriterInfo", "parse_metadata"]
