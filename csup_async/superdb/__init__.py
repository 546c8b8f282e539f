"""SuperDB's own CSUP files (``super`` v0.3.0, header version 16): reading only.

``super`` writes a sequence of objects, each with a 36-byte ``CSUP`` header,
then its metadata (BSUP version 2), types and vector data; this library's own
files are the trailer layout of the CSUP spec.  ``csup_async.open`` tells them
apart (:mod:`.detect`) and reads either through the same Reader API
(:mod:`.reader`).  Modules: :mod:`.bsup2` (BSUP version 2), :mod:`.intcomp` (the
integer coding), :mod:`.meta` (headers and metadata), :mod:`.vectors` (values),
:mod:`.columns` (projection).
"""
