"""The in-memory columnar result model: numpy-backed, Arrow-shaped arrays.

A scan can carry millions of rows, so values stay in numpy buffers (fixed-width
values, offsets + bytes for strings, offsets + child arrays for nesting) and
every row-moving operation (``take``, ``slice``, ``expand``, ``concat``,
``combine``) is vectorised for the primitive, binary and list kinds.  Python
objects appear only where the caller asks for them (``to_pylist``) and for the
few kinds numpy has no dtype for (128/256-bit ints, ip, net, type values).

Arrays are immutable: constructors store read-only views of their inputs
(never modifying the caller's arrays) and every operation returns a new array,
so slices and takes can share buffers safely.

The Python mapping (``to_pylist``, ``__getitem__``), used everywhere:

=====================================  =============================================
super type                             Python
=====================================  =============================================
int8 … int256, uint8 … uint256         ``int``
float16, float32, float64              ``float``
string / bytes / bool / null           ``str`` / ``bytes`` / ``bool`` / ``None``
time / duration                        ``numpy.datetime64`` / ``numpy.timedelta64`` (ns)
ip / net                               ``ipaddress`` addresses / networks
type                                   a :class:`csup_async.model.types.Type`
record                                 ``dict`` (field order kept)
array / set                            ``list`` (a set in its stored order)
map                                    ``dict``; when the key type contains a record,
                                       array, set or map (unhashable in Python) every
                                       value of that map type is instead a ``list`` of
                                       ``(key, value)`` tuples — decided by the type,
                                       never by the data, so a column is uniform
union                                  its member's value (``typed=True``:
                                       :class:`UnionValue`)
enum                                   its symbol (``str``)
named / error                          the underlying / wrapped value
=====================================  =============================================

``to_arrow`` maps ip, net, type and 128/256-bit ints to their string form
(``str(value)``; type values in Super syntax), strings to ``large_string`` and
bytes to ``large_binary`` (our offsets are int64, so both are zero-copy), arrays
and sets to ``large_list``, time to ``timestamp[ns, UTC]``, enums to
``dictionary<int32, string>``; maps with primitive keys to ``map`` and other
maps to ``large_list<struct<key, value>>``; unions to dense unions (a null row
is a null of the first member, as Arrow unions have no validity: their
``null_count`` is 0 though ``to_pylist`` gives None);
named and error types to their underlying array, a record field of a named type
carrying ``{"csup.name": name}`` field metadata.

Modules: :mod:`.kinds` (numpy forms of types), :mod:`.buffers` (vectorised buffer
operations), :mod:`.model` (the array classes, ``concat``, ``null_array``,
``fold_nulls``), :mod:`.arrow` (the Arrow export), :mod:`.combine` (per-super-type
parts into rows) and :mod:`.from_python` (``from_pylist``).
"""

from ..model.values import UnionValue
from .arrow import MissingDependencyError, require
from .buffers import group_ranks, range_indices
from .combine import combine, gather
from .from_python import from_pylist
from .model import Array, ArrayIndexError, BinaryArray, PrimitiveArray
from .nested import (
    ListArray,
    MapArray,
    NullArray,
    StructArray,
    UnionArray,
    concat,
    fold_nulls,
    null_array,
)

__all__ = [
    "Array", "PrimitiveArray", "BinaryArray", "NullArray", "ListArray", "MapArray",
    "StructArray", "UnionArray", "UnionValue", "ArrayIndexError", "MissingDependencyError",
    "concat", "null_array", "combine", "gather", "fold_nulls", "from_pylist", "group_ranks",
    "range_indices", "require",
]
