"""Deterministic JSON for the Python mapping (``csup-async cat``, ``scan --format json``).

JSON cannot say everything the super data model can, so the choices are
fixed and documented: times as RFC 3339 UTC strings with nanoseconds when
present, durations as integer nanoseconds, bytes as ``0x``-prefixed hex, ip
and net addresses as strings, type values as their Super syntax, NaN and
infinities as the strings ``"NaN"``, ``"+Inf"``, ``"-Inf"``, maps whose keys
are not strings as a list of ``[key, value]`` pairs.
"""

from __future__ import annotations

import csv
import io
import ipaddress
import json
import math
from typing import Any

import numpy as np

from .. import arrays as A
from ..format.superdb.suptext import format_type
from ..model.iptext import ip_text
from ..model.types import NULL, ErrorType, NamedType, PrimitiveType, RecordType, Type
from ..model.values import UnionValue

_INTS = frozenset(f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64))


def json_value(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "+Inf" if v > 0 else "-Inf"
        return v
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return {k: json_value(x) for k, x in v.items()}
        return [[json_value(k), json_value(x)] for k, x in v.items()]
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, np.datetime64):
        s = str(np.datetime_as_string(v.astype("datetime64[ns]"), unit="ns"))
        if "." in s:
            s = s.rstrip("0").rstrip(".")
        return s + "Z"
    if isinstance(v, np.timedelta64):
        return int(v.astype("timedelta64[ns]").astype(np.int64))
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "0x" + bytes(v).hex()
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network,
                      ipaddress.IPv6Network)):
        return ip_text(v)
    if isinstance(v, Type):  # a type value, as super main prints it (-j)
        return f"<{format_type(v, names_only=True)}>"
    if isinstance(v, UnionValue):
        return json_value(v.value)
    if isinstance(v, np.generic):
        return json_value(v.item())
    return str(v)


def dumps(v: Any) -> str:
    return json.dumps(json_value(v), ensure_ascii=False, separators=(",", ":"))


# ------------------------------------------------------------ columnar ---
#
# The CLI prints millions of rows: building a Python object per value and
# ``json.dumps`` per row costs ~20 us a row.  Instead each column becomes an
# Arrow string array holding every row's JSON text (numbers by Arrow's casts,
# strings wrapped in quotes and escaped only where a byte needs it, records,
# arrays and unions assembled from their children's texts), and rows are
# joined element-wise: one pass of C per column.  The texts equal
# :func:`dumps` of each value except that floats are written in their
# shortest round-trip form (``1e-07`` may print as ``1e-7``; same number).
# Kinds without a vectorised form (maps, enums, ip/net/type, 128/256-bit ints)
# fall back to :func:`dumps` per value for that column only.

_NEEDS_ESCAPE = r'["\\\x00-\x1f]'
_CSV_SPECIAL = r'[",\r\n]|^$|^\s|\s$'


def have_pyarrow() -> bool:
    try:
        import pyarrow.compute  # noqa: F401
    except ImportError:
        return False
    return True


def _pa() -> tuple[Any, Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pa, pc


# Every Arrow array and scalar here is made with ``from_buffers``: pyarrow's ``array``,
# ``scalar`` and ``take`` of a numpy array look for pandas on each call and import it when
# it is installed, about a third of a second of every cold ``scan --format csv``.

def _np(values: np.ndarray) -> Any:
    """A bool or number numpy array (1-D) as an Arrow array, zero-copy for numbers."""
    pa, _ = _pa()
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), len(values), [
            None, pa.py_buffer(np.packbits(values, bitorder="little"))])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                 [None, pa.py_buffer(values)])


def _s(x: str) -> Any:
    return _strings([x])[0]


def _join(*parts: Any) -> Any:
    """Element-wise concatenation of string arrays and string scalars."""
    _, pc = _pa()
    args = [_s(p) if isinstance(p, str) else p for p in parts]
    return pc.binary_join_element_wise(*args, _s(""))


def _strings(values: list[str]) -> Any:
    pa, _ = _pa()
    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.LargeStringArray.from_buffers(len(encoded), pa.py_buffer(offsets),
                                            pa.py_buffer(b"".join(encoded)))


def _quote_json(strings: Any, data: np.ndarray | None = None) -> Any:
    """JSON string literals of a large_string array with no nulls (``data``: its bytes, to
    rule out escapes with one numpy pass instead of a regex per value)."""
    _, pc = _pa()
    quoted = _join('"', strings, '"')
    if data is not None and not ((data < 0x20) | (data == 0x22) | (data == 0x5C)).any():
        return quoted
    needs = pc.match_substring_regex(strings, _NEEDS_ESCAPE)
    if pc.any(needs).as_py():
        found = pc.indices_nonzero(needs)  # not to_numpy(), which imports pandas too
        idx = np.frombuffer(found.buffers()[1], np.uint64, count=len(found),
                            offset=found.offset * 8).astype(np.int64)
        fixed = [json.dumps(s, ensure_ascii=False) for s in strings.take(_np(idx)).to_pylist()]
        quoted = quoted.to_pylist()
        for i, s in zip(idx.tolist(), fixed, strict=True):
            quoted[i] = s
        quoted = _strings(quoted)
    return quoted


def _with_nulls(texts: Any, validity: np.ndarray | None, null: str = "null") -> Any:
    if validity is None or validity.all():
        return texts
    _, pc = _pa()
    return pc.if_else(_np(validity), texts, _s(null))


def _float_text(values: np.ndarray) -> Any:
    """Shortest round-trip text of float64 values, always with a '.' or exponent (a float
    stays a float for a JSON reader); NaN and infinities as the strings of :func:`json_value`."""
    pa, pc = _pa()
    s = pc.cast(_np(values), pa.large_string())
    finite = np.isfinite(values)
    whole = finite & (values == np.floor(np.where(finite, values, 0)))
    if whole.any():  # "1" -> "1.0" (but "1e+20" stays)
        whole_arr = pc.and_(_np(whole), pc.invert(pc.match_substring(s, "e")))
        s = pc.if_else(whole_arr, _join(s, ".0"), s)
    if not finite.all():
        s = pc.if_else(_np(np.isnan(values)), _s('"NaN"'), s)
        s = pc.if_else(_np(values == np.inf), _s('"+Inf"'), s)
        s = pc.if_else(_np(values == -np.inf), _s('"-Inf"'), s)
    return s


def _time_text(values: np.ndarray) -> Any:
    """RFC 3339 UTC with the nanoseconds present (``json_value``'s form), quoted."""
    pa, pc = _pa()
    ts = _np(values.view(np.int64)).cast(pa.timestamp("ns", tz="UTC"))
    s = pc.cast(ts, pa.large_string())  # "2020-01-01 00:00:00.123000000Z"
    s = pc.replace_substring(s, " ", "T", max_replacements=1)
    s = pc.replace_substring_regex(s, r"\.?0+Z$", "Z")
    return _join('"', s, '"')


def _bytes_text(arr: A.BinaryArray) -> Any:
    pa, _ = _pa()
    o = arr.offsets
    lo = int(o[0])
    hexed = arr.data[lo:int(o[-1])].tobytes().hex().encode()
    rel = (o - lo) * 2
    body = pa.LargeStringArray.from_buffers(len(arr), pa.py_buffer(rel.astype(np.int64)),
                                            pa.py_buffer(hexed))
    return _join('"0x', body, '"')


def json_texts(arr: A.Array) -> Any:
    """Each row's JSON text (``dumps`` of the value) as a large_string array without nulls."""
    pa, pc = _pa()
    n = len(arr)
    t = arr.type
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if isinstance(arr, A.NullArray) or t == NULL:
        return _strings(["null"]).take(_np(np.zeros(n, np.int64))) if n else _strings([])
    if isinstance(arr, A.PrimitiveArray) and isinstance(t, PrimitiveType):
        name = t.name
        if name in _INTS or name == "bool":
            texts = pc.cast(arr.to_arrow(), pa.large_string())
        elif name in ("float16", "float32", "float64"):
            texts = _float_text(arr.values.astype(np.float64, copy=False))
        elif name == "time":
            texts = _time_text(arr.values)
        elif name == "duration":
            texts = pc.cast(_np(arr.values.view(np.int64)), pa.large_string())
        else:
            return _strings([dumps(v) for v in arr.to_pylist()])
        return pc.fill_null(_with_nulls(texts, arr.validity), _s("null"))
    if isinstance(arr, A.BinaryArray):
        if t.name == "bytes":  # type: ignore[attr-defined]
            texts = _bytes_text(arr)
        else:
            o = arr.offsets
            texts = _quote_json(pc.fill_null(arr.to_arrow(), _s("")),
                                arr.data[int(o[0]):int(o[-1])])
        return _with_nulls(texts, arr.validity)
    if isinstance(arr, A.StructArray) and isinstance(t, RecordType):
        if not t.fields:
            return _with_nulls(_strings(["{}"] * n), arr.validity)
        parts: list[Any] = []
        for i, (f, child) in enumerate(zip(t.fields, arr.fields, strict=True)):
            parts += [("{" if i == 0 else ",") + json.dumps(f.name, ensure_ascii=False) + ":",
                      json_texts(child)]
        return _with_nulls(_join(*parts, "}"), arr.validity)
    if isinstance(arr, A.ListArray):
        child = json_texts(arr.elements())
        offs = (arr.offsets - arr.offsets[0]).astype(np.int64)
        lists = pa.LargeListArray.from_arrays(_np(offs), child)
        return _with_nulls(_join("[", pc.binary_join(lists, _s(",")), "]"), arr.validity)
    if isinstance(arr, A.UnionArray):
        kids = [json_texts(c) for c in arr.children]
        if not kids:
            return _strings(["null"] * n)
        base = np.cumsum([0] + [len(k) for k in kids])[:-1]
        tags = arr.tags
        idx = np.where(tags >= 0, base[np.maximum(tags, 0)] + arr.positions(), -1)
        allk = pa.concat_arrays([*kids, _strings(["null"])])
        idx = np.where(idx < 0, len(allk) - 1, idx)
        return allk.take(_np(idx.astype(np.int64)))
    return _strings([dumps(v) for v in arr.to_pylist()])


def json_lines(columns: dict[str, A.Array]) -> bytes:
    """JSON lines of rows whose keys are ``columns``' keys: ``{"k":v,...}\\n`` per row."""
    if not columns:
        return b""
    parts: list[Any] = []
    for i, (name, arr) in enumerate(columns.items()):
        parts += [("{" if i == 0 else ",") + json.dumps(name, ensure_ascii=False) + ":",
                  json_texts(arr)]
    return _buffer_bytes(_join(*parts, "}\n"))


def value_lines(arr: A.Array) -> bytes:
    """One JSON text per row (``csup-async cat``): ``dumps(value)\\n``."""
    return _buffer_bytes(_join(json_texts(arr), "\n"))


def csv_cells(arr: A.Array) -> Any:
    """Each row's CSV cell: strings as they are, other values as their JSON text; quoted
    when needed (and the empty string always, so it differs from null, an empty cell)."""
    _, pc = _pa()
    t = arr.type
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if isinstance(arr, A.BinaryArray) and t.name == "string":  # type: ignore[attr-defined]
        raw = pc.fill_null(arr.to_arrow(), _s(""))
        special = _np(_csv_special(arr))
    elif isinstance(arr, A.PrimitiveArray) and t.name in _SAFE_CSV:  # type: ignore[attr-defined]
        # numbers, booleans, times: their text never holds a comma, quote or newline
        raw = json_texts(arr)
        if t.name in ("time", "float16", "float32", "float64"):  # type: ignore[attr-defined]
            raw = pc.replace_substring(raw, '"', "")  # "NaN", times: the string's text
        return _with_nulls(raw, arr.validity, null="")
    else:
        raw = json_texts(arr)
        if isinstance(arr, (A.PrimitiveArray, A.BinaryArray)):  # a scalar as its JSON
            raw = pc.replace_substring_regex(raw, r'^"([^\\]*)"$', r"\1")  # string's text
        special = pc.match_substring_regex(raw, _CSV_SPECIAL)
    if pc.any(special).as_py():
        raw = pc.if_else(special, _join('"', pc.replace_substring(raw, '"', '""'), '"'), raw)
    return _with_nulls(raw, arr.validity, null="")


_SAFE_CSV = _INTS | {"bool", "float16", "float32", "float64", "time", "duration"}


def _csv_special(arr: A.BinaryArray) -> np.ndarray:
    """Which strings must be quoted in CSV: a quote, comma or line break inside, empty,
    or space at either end; found with numpy over the bytes, not a regex per value."""
    o = arr.offsets
    data = arr.data
    starts, ends = o[:-1], o[1:]
    empty = starts == ends
    special = empty.copy()
    body = data[int(o[0]):int(o[-1])]
    bad = (body == 0x22) | (body == 0x2C) | (body == 0x0A) | (body == 0x0D)
    if bad.any():
        hits = np.concatenate([[0], np.cumsum(bad, dtype=np.int64)])
        special |= hits[ends - o[0]] > hits[starts - o[0]]
    full = ~empty
    if full.any():
        first = data[starts[full]]
        last = data[ends[full] - 1]
        space = (first <= 0x20) | (last <= 0x20)
        special[full] |= space
    return special


def csv_header(names: list[str]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(names)
    return buf.getvalue().encode()


def csv_lines(columns: dict[str, A.Array]) -> bytes:
    """CSV rows (no header) of ``columns``."""
    if not columns:
        return b""
    parts: list[Any] = []
    for i, arr in enumerate(columns.values()):
        if i:
            parts.append(",")
        parts.append(csv_cells(arr))
    return _buffer_bytes(_join(*parts, "\n"))


def _buffer_bytes(texts: Any) -> bytes:
    """The concatenated text of a large_string array, straight from its data buffer."""
    if len(texts) == 0:
        return b""
    bufs = texts.buffers()
    offs = np.frombuffer(bufs[1], np.int64, count=len(texts) + 1, offset=texts.offset * 8)
    return bufs[2].to_pybytes()[int(offs[0]):int(offs[-1])] if bufs[2] is not None else b""
