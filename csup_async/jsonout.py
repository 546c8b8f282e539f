"""Deterministic JSON for the Python mapping (``csup-async cat``, ``scan --format json``).

JSON cannot say everything the super data model can, so the choices are
fixed and documented: times as RFC 3339 UTC strings with nanoseconds when
present, durations as integer nanoseconds, bytes as ``0x``-prefixed hex, ip
and net addresses as strings, type values as their Super syntax, NaN and
infinities as the strings ``"NaN"``, ``"+Inf"``, ``"-Inf"``, maps whose keys
are not strings as a list of ``[key, value]`` pairs.
"""

from __future__ import annotations

import ipaddress
import json
import math
from typing import Any

import numpy as np

from .types import Type
from .values import UnionValue


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
        return str(v)
    if isinstance(v, Type):
        return str(v)
    if isinstance(v, UnionValue):
        return json_value(v.value)
    if isinstance(v, np.generic):
        return json_value(v.item())
    return str(v)


def dumps(v: Any) -> str:
    return json.dumps(json_value(v), ensure_ascii=False, separators=(",", ":"))
