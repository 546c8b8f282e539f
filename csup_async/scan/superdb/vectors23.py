"""The vector kinds CSUP version 23 added, to Python values (for :class:`.vectors.Decoder`,
the ``dec`` of every function here).

``bool``: the values as bits, least significant first, in 64-bit words (the
metadata's count says how many are values); ``ip``/``net``: a byte run and
uint32 offsets, each value its address bytes (4 or 16; a net then one byte of
prefix length); ``typevalue``: uint32 type IDs (below 32 a primitive, else an
entry of the object's typedefs table); ``null``/``none``/``empty``: a count and
no data; ``enum``: the symbol indexes as a uint vector; ``any``: each value's
Super Binary body (a bytes vector) and its type (a typevalue vector).  And the
run lengths a two-member union stores instead of tags.
"""

from __future__ import annotations

import ipaddress
from itertools import pairwise
from typing import Any

import numpy as np

from ...decode.kernels import fill_runs
from ...format.superdb import bsup2, bsup5, intcomp
from ...format.superdb.defuse import defuse
from ...format.superdb.meta import Node
from ...model.errors import FormatError
from ...model.values import Value


def rle_tags(runs: np.ndarray | list[int], count: int) -> np.ndarray:
    """Tags (int32) of a two-member union from its runs: alternately runs of tag 1 and
    of tag 0, starting with tag 1; what the runs leave is tag 0 (no runs: every value
    tag 0).  One pass in C (decode.kernels.fill_runs)."""
    return fill_runs(np.asarray(runs, dtype=np.int64), 1, 0, count)


def bits(raw: bytes, count: int) -> list[bool]:
    if len(raw) * 8 < count:
        raise FormatError(f"bool vector of {count} values has {len(raw)} bytes of bits")
    b = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")[:count]
    return b.astype(bool).tolist()


def _table(dec: Any, n: Node) -> list[bytes]:
    if n.count == 0:
        return []
    data = dec.seg(n, "bytes")
    offs = intcomp.uint32s(dec.seg(n, "offsets")).tolist()
    if len(offs) != n.count + 1 or offs[0] != 0 or offs[-1] > len(data) or any(
            b < a for a, b in pairwise(offs)):
        raise FormatError(f"{n.kind} vector's offsets do not fit its bytes")
    return [data[a:b] for a, b in pairwise(offs)]


def ip_of(b: bytes) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if len(b) == 4:
        return ipaddress.IPv4Address(b)
    if len(b) == 16:
        return ipaddress.IPv6Address(b)
    raise FormatError(f"ip value of {len(b)} bytes")


def net_of(b: bytes) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if len(b) not in (5, 17):
        raise FormatError(f"net value of {len(b)} bytes")
    addr, bits_ = ip_of(b[:-1]), b[-1]
    try:
        return ipaddress.ip_network(f"{addr}/{bits_}", strict=False)
    except ValueError as e:
        raise FormatError(f"net value: {e}") from None


def type_values(dec: Any, n: Node) -> list[Any]:
    ids = intcomp.uint32s(dec.seg(n, "values")).tolist() if n.count else []
    if len(ids) != n.count:
        raise FormatError(f"type vector of {n.count} values has {len(ids)} IDs")
    if dec.types is None:
        raise FormatError("type values without the object's types section")
    table = dec.types()
    return [table.lookup(i) for i in ids]


def values(dec: Any, n: Node, d: int) -> list[Any]:
    k = n.kind
    if k == "bool":
        return bits(dec.seg(n, "values"), n.count) if n.count else []
    if k == "ip":
        return [ip_of(b) for b in _table(dec, n)]
    if k == "net":
        return [net_of(b) for b in _table(dec, n)]
    if k == "typevalue":
        return type_values(dec, n)
    if k == "null":
        return [None] * n.count
    if k == "none":
        return [bsup5.NONE] * n.count
    if k == "empty":
        return []
    if k == "enum":
        syms = n.type.symbols  # type: ignore[union-attr]
        idx = dec.values(n.kids[0], d)
        if idx and max(idx) >= len(syms):
            raise FormatError(f"enum index {max(idx)} of {len(syms)} symbols")
        return [syms[i] for i in idx]
    if k == "any":
        bodies = dec.values(n.kids[0], d)
        types = dec.values(n.kids[1], d)
        if len(types) != len(bodies):
            raise FormatError(f"any vector of {len(bodies)} values has {len(types)} types")

        out = []
        for t, b in zip(types, bodies, strict=True):
            v = bsup5.decode_value(t, b, typed=dec.typed, empty=True)
            out.append(Value(t, v) if dec.typed else v)
        return out
    raise FormatError(f"vectors of kind {k} are not read here")


def fusion_values(dec: Any, n: Node, d: int) -> list[Any]:
    """A v23 fusion vector's values, each as its own subtype's value."""
    vals = dec.values(n.kids[0], d)
    types = subtypes(dec, n)
    if types is None:
        return vals
    if len(types) != len(vals):
        raise FormatError(f"fusion vector of {len(vals)} values has {len(types)} subtypes")
    if dec.typed:
        return [Value(s, defuse(v, s)) for v, s in zip(vals, types, strict=True)]
    return [defuse(v, s) for v, s in zip(vals, types, strict=True)]


def subtypes(dec: Any, n: Node) -> list[Any] | None:
    """The subtype of each value of a fusion vector (None: no types section): v23 keeps
    them as a type-value vector, v16 as uint32 IDs into its object's type section."""
    if n.kind != "fusion" or dec.types is None:
        return None
    if isinstance(n.value, int):
        return type_values(dec, dec.nodes[n.value])
    seg = n.seg("subtypes")
    if seg is None:
        return None
    ids = intcomp.uint32s(dec.seg(n, "subtypes")).tolist() if seg.size else []
    table = dec.types()
    return [table.lookup(i) for i in ids]


class TypeList:
    """v16's type section: a BSUP version 2 stream of type values, looked up by position."""

    def __init__(self, types: list[Any]) -> None:
        self.types = types

    @classmethod
    def from_bsup2(cls, raw: bytes | memoryview) -> TypeList:
        out = []
        for t, body in bsup2.read_values(raw, bsup2.V2):
            if getattr(t, "name", "") != "type" or body is None:
                raise FormatError("CSUP type section holds a value that is not a type")
            out.append(bsup2.decode_type_value(body, bsup2.V2))
        return cls(out)

    def lookup(self, i: int) -> Any:
        if not 0 <= i < len(self.types):
            raise FormatError(f"fusion subtype ID {i} is past the {len(self.types)} types "
                              "of its object's type section")
        return self.types[i]
