"""SuperDB's own CSUP files (``super`` v0.3.0, header version 16): reading only.

``super`` writes a sequence of objects, each with a 36-byte ``CSUP`` header,
then its metadata (BSUP version 2), types and vector data; this library's own
files are the trailer layout of the CSUP spec.  ``csup_async.open`` tells them
apart (:mod:`csup_async.readers.detect`) and reads either through the same Reader API
(:mod:`csup_async.readers.superdb`).  Modules here, the bytes only: :mod:`.bsup2` (BSUP
version 2), :mod:`.intcomp` (the integer coding), :mod:`.meta` (headers and metadata),
:mod:`.describe` (``csup-async inspect``); the values and projection are read by
:mod:`csup_async.scan.superdb`.
"""
