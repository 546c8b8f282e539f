"""The limits a BSUP reader holds a stream to.

A few bytes may claim gigabytes or types of 2**100 nodes; each limit turns such a
claim into a LimitError or FormatError before any memory is spent on it.
"""

from __future__ import annotations

MAX_FRAME = 1 << 30  # bytes one frame may claim (compressed or not)
MAX_DEPTH = 100  # nesting of types and values a file may ask for
MAX_TYPES = 1 << 18  # typedefs one stream may define (~5 us and ~200 bytes each)
# Nodes of one type counted as a tree (a type may share a subtype many times,
# so a few bytes of typedefs can describe a type of 2**100 nodes, which every
# hash, comparison and print would walk), and of all the typedefs of a stream.
MAX_TYPE_SIZE = 1 << 16
MAX_TYPE_NODES = 1 << 22
# LZ4 turns n bytes into at most about 255 n: a claim beyond is a lie (or a bomb).
LZ4_MAX_RATIO = 256
