"""The Zed (v1.7.0) types of lake metadata, and reading records of them by field name.

Zed marshals Go structs with package-qualified type names (``pools.Config``,
``commits.Add``); a KSUID is ``bytes`` named ``ksuid.KSUID``.  Readers here go
by field names, never by type IDs or names, so an unnamed or reordered record
still reads; writers emit exactly the names and field order Zed does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..format import bsup
from ..model.errors import CsupError
from ..model.types import (
    BYTES,
    INT64,
    NULL,
    STRING,
    TIME,
    UINT8,
    UINT64,
    ArrayType,
    Field,
    NamedType,
    RecordType,
    Type,
    underlying,
)
from ..model.values import Value, infer_type
from .errors import LakeError

KSUID_T = NamedType("ksuid.KSUID", BYTES)


def rec(*fields: tuple[str, Type]) -> RecordType:
    return RecordType(tuple(Field(n, t) for n, t in fields))


LAKE_MAGIC = NamedType("lake.LakeMagic", rec(("magic", STRING), ("version", INT64)))
LAYOUT = NamedType("order.Layout", rec(
    ("order", NamedType("order.Which", STRING)),
    ("keys", NamedType("field.List", ArrayType(NamedType("field.Path", ArrayType(STRING)))))))
POOL_CONFIG = NamedType("pools.Config", rec(
    ("ts", TIME), ("name", STRING), ("id", KSUID_T), ("layout", LAYOUT),
    ("seek_stride", INT64), ("threshold", INT64)))
def superdb_pool_config(version: int) -> NamedType:
    """``pools.Config`` as ``super db create`` writes it: the layout is an
    ``order.SortKey``; super main's has no ``seek_stride`` (BSUP ``version`` 5)."""
    sort_key = NamedType("order.SortKey", underlying(LAYOUT))
    fields = [("ts", TIME), ("name", STRING), ("id", KSUID_T), ("layout", sort_key)]
    if version != 5:
        fields.append(("seek_stride", INT64))
    fields.append(("threshold", INT64))
    return NamedType("pools.Config", rec(*fields))


BRANCH_CONFIG = NamedType("branches.Config", rec(
    ("ts", TIME), ("name", STRING), ("commit", KSUID_T)))


def journal_add(entry_t: Type, kind: str = "Add") -> NamedType:
    """``journal.Add`` / ``journal.Update`` around an entry type."""
    return NamedType(f"journal.{kind}", rec(("entry", entry_t)))


JOURNAL_DELETE = NamedType("journal.Delete", rec(("entry_key", STRING)))


def commit_t(meta_t: Type = NULL) -> NamedType:
    return NamedType("commits.Commit", rec(
        ("id", KSUID_T), ("parent", KSUID_T), ("retries", UINT8), ("author", STRING),
        ("date", TIME), ("message", STRING), ("meta", meta_t)))


def data_object_t(min_t: Type, max_t: Type) -> NamedType:
    return NamedType("data.Object", rec(
        ("id", KSUID_T), ("min", min_t), ("max", max_t), ("count", UINT64), ("size", INT64)))


def add_t(min_t: Type, max_t: Type) -> NamedType:
    return NamedType("commits.Add", rec(("commit", KSUID_T),
                                        ("object", data_object_t(min_t, max_t))))


def id_action_t(kind: str) -> NamedType:
    """``commits.Delete``, ``commits.AddVector``, ``commits.DeleteVector``."""
    return NamedType(f"commits.{kind}", rec(("commit", KSUID_T), ("id", KSUID_T)))


def seek_entry_t(min_t: Type, max_t: Type) -> RecordType:
    """Zed writes seek entries unnamed."""
    return rec(("min", min_t), ("max", max_t), ("val_off", UINT64), ("val_cnt", UINT64),
               ("offset", UINT64), ("length", UINT64))


# ----------------------------------------------------------------- reading ---

def type_name(t: Type) -> str | None:
    return t.name if isinstance(t, NamedType) else None


def fields_of(t: Type) -> dict[str, Type] | None:
    u = underlying(t)
    if not isinstance(u, RecordType):
        return None
    return {f.name: f.type for f in u.fields}


class Record:
    """One decoded record: its type's name, field values (plain Python), field types."""

    __slots__ = ("name", "types", "values")

    def __init__(self, name: str | None, values: dict[str, Any], types: dict[str, Type]) -> None:
        self.name, self.values, self.types = name, values, types

    def get(self, field: str, path: str, kind: type | tuple[type, ...] | None = None) -> Any:
        if field not in self.values:
            raise LakeError(f"{self.name or 'record'} has no field {field!r}", path=path)
        v = self.values[field]
        if kind is not None and not isinstance(v, kind):
            raise LakeError(f"{self.name or 'record'} field {field!r} is "
                            f"{type(v).__name__}, not {_kind_name(kind)}", path=path)
        return v

    def ksuid(self, field: str, path: str) -> bytes:
        v = self.get(field, path, bytes)
        if len(v) != 20:
            raise LakeError(f"{self.name or 'record'} field {field!r} is {len(v)} bytes, not "
                            "a 20-byte KSUID", path=path)
        return v

    def value(self, field: str, path: str) -> Value:
        """A field with its type (min/max keys, whose type follows the data)."""
        self.get(field, path)
        t, v = self.types[field], self.values[field]
        if type(t).__name__ == "FusionType":  # super main's fusion(all): the value's own type

            t = NULL if v is None else infer_type(v)
        return Value(t, v)

    def sub(self, field: str, path: str) -> Record:
        t = self.types.get(field)
        fs = fields_of(t) if t is not None else None
        v = self.get(field, path, dict)
        if fs is None:
            raise LakeError(f"field {field!r} is not a record", path=path)
        return Record(type_name(t), v, fs)  # type: ignore[arg-type]


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return kind.__name__


def read_records(buf: bytes | memoryview, path: str) -> Iterator[Record | Value]:
    """Every value of a ZNG object: records as Record, anything else as a typed Value.

    A decoding failure (a torn object, LZ4 garbage, a stream cut short) is a
    LakeError naming the object.
    """
    try:
        if buf and buf[0] == 0x85:  # BSUP 5 (super main's database): by its own reader
            yield from _records5(buf)
            return
        if buf and buf[0] != 0xFF and buf[0] & 0x80:  # BSUP 1/2: a SuperDB database's
            from ..format.superdb.tov0 import to_v0

            buf = to_v0(buf)
        for t, body in bsup.iter_raw_values(buf):
            fs = fields_of(t)
            v = bsup.decode_value(t, body)
            if fs is None or v is None:
                yield Value(t, v)
            else:
                yield Record(type_name(t), v, fs)
    except LakeError:
        raise
    except CsupError as e:
        raise LakeError(f"not a valid ZNG object: {e.message}", path=path) from None


def _records5(buf: bytes | memoryview) -> Iterator[Record | Value]:
    """Records of BSUP version 5: a fused record (super main fuses a snapshot's actions)
    read as its supertype's fields, those of its value present."""
    from ..format.superdb import bsup5
    from ..format.superdb.bsup2 import FusionType

    for t, body in bsup5.read_values(buf):
        v = bsup5.decode_value(t, body)
        st = t
        while isinstance(st, FusionType):
            st = st.inner
        fs = fields_of(st)
        if fs is None or v is None:
            yield Value(t, v)
        else:
            yield Record(type_name(t) or type_name(st), v, fs)


def ends_with_eos(buf: bytes | memoryview) -> bool:
    return len(buf) > 0 and buf[-1] == 0xFF


def encode(values: list[tuple[Type, Any]], version: int = 0) -> bytes:
    """One ZNG stream, LZ4 where it shrinks (as zed writes), ended with 0xff; in BSUP
    ``version`` 2 or 5 for a SuperDB database (its values in SuperDB's model)."""
    if version == 0:
        return bsup.encode_stream(values)
    out = bytearray()
    enc = stream_encoder(out, version)
    for t, v in values:
        enc.write(t, v)
    enc.end_stream()
    return bytes(out)


def stream_encoder(out: bytearray, version: int) -> Any:
    """A stream encoder (``write(t, v)``, ``end_stream``; ``write_body`` in version 0)
    of BSUP ``version``: 0 (Zed), 1 or 2 (super v0.2.0 / v0.3.0), 5 (super main)."""
    if version == 0:
        return bsup.StreamEncoder(out)
    if version in (1, 2):
        from ..writers.targets.bsupn import StreamEncoderN

        return StreamEncoderN(out, version)
    if version == 5:
        from ..format.superdb.bsup5w import StreamEncoder5

        return StreamEncoder5(out)
    raise LakeError(f"writing BSUP version {version} is not available in this build")


def any_type() -> Type:
    """``any`` (fusion of ``all``): the type super main marshals a ``super.Value`` field
    as (a commit's ``meta``, a data object's ``min``/``max``); its values carry their
    own types."""
    from ..format.superdb.bsup2 import FusionType
    from ..format.superdb.bsup5 import ALL_T

    return FusionType(ALL_T)
