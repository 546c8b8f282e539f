"""Super Binary (BSUP, formerly ZNG) version-0 streams: types, values, frames.

All CSUP metadata is BSUP, and BSUP/ZNG files are an input and output format
of the CLI, so this codec is exact for every type: decoding then encoding a
value gives back its bytes.  It is pure Python: metadata is small, and bulk
column data goes through the vectorised decoders instead.

One module per layer, each importing only the ones before it:

- :mod:`.limits`: what a stream may claim before it is refused;
- :mod:`.tags`: uvarints, tagged bodies, sign-and-magnitude integers, counted names;
- :mod:`.typecodec`: type values, typedefs read and written (:class:`TypeContext`,
  :class:`TypedefEncoder`), type checks;
- :mod:`.valuecodec`: value bodies to Python and back;
- :mod:`.frames`: frames and whole streams (:func:`read_values`, :class:`StreamEncoder`).
"""

from ...model.types import PRIMITIVES
from .frames import (
    FRAME_CONTROL,
    FRAME_TYPES,
    FRAME_VALUES,
    StreamEncoder,
    encode_stream,
    iter_raw_values,
    read_frames,
    read_values,
    stream_shape,
)
from .limits import LZ4_MAX_RATIO, MAX_DEPTH, MAX_FRAME, MAX_TYPE_NODES, MAX_TYPE_SIZE, MAX_TYPES
from .tags import (
    append_tagged,
    check_count,
    counted,
    decode_int,
    decode_uint,
    encode_int,
    encode_uint,
    iter_tagged,
    read_counted,
    read_uvarint,
    split_tagged,
    uvarint,
)
from .typecodec import (
    FIRST_TYPEDEF_ID,
    ID_ARRAY,
    ID_ENUM,
    ID_ERROR,
    ID_MAP,
    ID_NAMED,
    ID_RECORD,
    ID_SET,
    ID_UNION,
    TV_ARRAY,
    TV_ENUM,
    TV_ERROR,
    TV_MAP,
    TV_NAMED_DEF,
    TV_NAMED_REF,
    TV_RECORD,
    TV_SET,
    TV_UNION,
    TypeContext,
    TypedefEncoder,
    check_type,
    decode_type_value,
    encode_type_value,
    type_limits,
)
from .valuecodec import (
    UNION_TAG_SIGNED,
    decode_primitive,
    decode_value,
    encode_primitive,
    encode_value,
    select_member,
)

__all__ = [
    "FIRST_TYPEDEF_ID", "FRAME_CONTROL", "FRAME_TYPES", "FRAME_VALUES", "ID_ARRAY", "ID_ENUM",
    "ID_ERROR", "ID_MAP", "ID_NAMED", "ID_RECORD", "ID_SET", "ID_UNION", "LZ4_MAX_RATIO",
    "MAX_DEPTH", "MAX_FRAME", "MAX_TYPES", "MAX_TYPE_NODES", "MAX_TYPE_SIZE", "PRIMITIVES",
    "TV_ARRAY", "TV_ENUM", "TV_ERROR", "TV_MAP", "TV_NAMED_DEF", "TV_NAMED_REF", "TV_RECORD",
    "TV_SET", "TV_UNION", "UNION_TAG_SIGNED", "StreamEncoder", "TypeContext", "TypedefEncoder",
    "append_tagged", "check_count", "check_type", "counted", "decode_int", "decode_primitive",
    "decode_type_value", "decode_uint", "decode_value", "encode_int", "encode_primitive",
    "encode_stream", "encode_type_value", "encode_uint", "encode_value", "iter_raw_values",
    "iter_tagged", "read_counted", "read_frames", "read_uvarint", "read_values",
    "select_member", "split_tagged", "stream_shape", "type_limits", "uvarint",
]
