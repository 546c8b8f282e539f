"""Reading the formats the CLI converts from: BSUP/ZNG, JSON/NDJSON, Parquet, CSUP."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from ..model.errors import CsupError, FormatError, NotFoundError
from ..model.values import Value

BSUP_EXT = (".bsup", ".zng")
JSON_EXT = (".json", ".ndjson", ".jsonl")
PARQUET_EXT = (".parquet", ".pq")
CSUP_EXT = (".csup", ".vng")


def kind_of(path: str) -> str:
    low = path.lower()
    for kind, exts in (("bsup", BSUP_EXT), ("json", JSON_EXT), ("parquet", PARQUET_EXT),
                       ("csup", CSUP_EXT)):
        if low.endswith(exts):
            return kind
    raise CsupError(f"unknown file type (expected one of "
                    f"{', '.join(BSUP_EXT + JSON_EXT + PARQUET_EXT + CSUP_EXT)})", path=path)


class _IntRange:
    """A ``parse_int`` hook noting the first integer outside int64/uint64 (the writer's
    widest inferred ints), so the error can name the line it is on."""

    def __init__(self) -> None:
        self.big: str | None = None

    def __call__(self, s: str) -> int:
        v = int(s)
        if self.big is None and not -(1 << 63) <= v < (1 << 64):
            self.big = s
        return v

    def check(self, path: str, line: int) -> None:
        if self.big is not None:
            shown = self.big if len(self.big) <= 40 else self.big[:37] + "..."
            raise FormatError(f"line {line}: integer {shown} does not fit int64 or uint64; "
                              "quote it in the JSON to keep it as a string, or write it "
                              "with a decimal point to read it as a float", path=path)


def read_json(path: str) -> Iterator[Any]:
    """A JSON array (one row per element), one JSON value, or JSON lines."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    ints = _IntRange()
    try:
        doc = json.loads(text, parse_int=ints)
    except json.JSONDecodeError:
        yield from json_lines(text, path)
        return
    if ints.big is not None:
        ints.check(path, text.count("\n", 0, max(text.find(ints.big), 0)) + 1)
    if isinstance(doc, list) and not path.lower().endswith((".ndjson", ".jsonl")):
        yield from doc
    else:
        yield doc


def json_lines(text: str, path: str, first_line: int = 1) -> Iterator[Any]:
    """The values of JSON lines (blank lines skipped), ``text``'s first line being line
    ``first_line`` of ``path`` (for the errors)."""
    for i, line in enumerate(text.splitlines(), first_line):
        if line.strip():
            ints = _IntRange()
            try:
                value = json.loads(line, parse_int=ints)
            except json.JSONDecodeError as e:
                raise FormatError(f"line {i}: invalid JSON: {e.msg}", path=path) from None
            ints.check(path, i)
            yield value


class JsonFile:
    """The values of a JSON/NDJSON file, keeping its path in ``.path``.

    Iterating gives the values (:func:`read_json`: what every consumer understands);
    ``csup_async.write`` looks at ``.path`` instead and parses the lines into columns
    without a Python object per value (:mod:`csup_async.writers.ndjson`).  ``on_rows``, when
    set, is called with the number of rows written so far (the CLI's progress line).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.on_rows: Any = None

    def __iter__(self) -> Iterator[Any]:
        return read_json(self.path)


#: SuperDB's BSUP versions besides Zed's version 0, by the version byte that starts
#: each of their frames: the release that writes each and the module that reads it.
SUPERDB_BSUP = {1: ("super v0.2.0", "bsup2"), 2: ("super v0.3.0", "bsup2"),
                5: ("super main", "bsup5")}


def bsup_version(data: bytes) -> int:
    """The BSUP version of a stream: 0 (Zed) unless its first frame starts with a
    version byte (``0x80 | version``, SuperDB); end-of-stream markers skipped."""
    for b in data:
        if b != 0xFF:
            return b & 0x7F if b & 0x80 else 0
    return 0


def read_bsup(path: str) -> Iterator[Value]:
    from ..format.bsup import decode_value, iter_raw_values

    with open(path, "rb") as f:
        data = f.read()
    version = bsup_version(data)
    try:
        if version:
            yield from _read_superdb_bsup(data, version, path)
            return
        for t, body in iter_raw_values(data):
            yield Value(t, decode_value(t, body, typed=True))
    except CsupError as e:
        raise e.with_path(path) from None


def _superdb_codec(version: int) -> Any:
    """The module that reads SuperDB's BSUP ``version``, or ``None``."""
    if version in (1, 2):
        from ..format.superdb import bsup2

        return bsup2
    if version == 5:
        from ..format.superdb import bsup5

        return bsup5
    return None


def _read_superdb_bsup(data: bytes, version: int, path: str) -> Iterator[Value]:
    """SuperDB's BSUP; a version no module here reads is refused by name."""
    codec = _superdb_codec(version)
    if codec is None:
        readable = ", ".join(f"{v} ({who})" for v, (who, _) in SUPERDB_BSUP.items()
                             if _superdb_codec(v) is not None)
        raise FormatError(f"BSUP version {version} is not read here (versions read: 0 "
                          f"(Zed), {readable})", path=path)
    from ..format.superdb.defuse import top_value  # a fusion value: its subtype's

    if version == 5:
        for t, body in codec.read_values(data):
            yield top_value(t, codec.decode_value(t, body, typed=True, fused=True,
                                                  empty=True))
        return
    dialect = codec.V1 if version == 1 else codec.V2
    for t, body in codec.read_values(data, dialect):
        yield top_value(t, codec.decode_value(t, body, dialect=dialect, typed=True,
                                                fused=True))


async def _read_csup(path: str) -> list[Value]:
    from ..readers.opening import open as open_csup

    async with open_csup(path) as r:
        return await r.read_values()


def read_values(path: str) -> Iterator[Any]:
    """Values of any supported input file (plain Python or typed ``Value``s)."""
    if not os.path.exists(path) and "://" not in path:
        raise NotFoundError("no such file", path=path)  # exit code 3, as for objects
    kind = kind_of(path)
    if kind == "json":
        return JsonFile(path)
    if kind == "bsup":
        return read_bsup(path)
    if kind == "parquet":
        from .arrow_input import parquet_values

        return parquet_values(path)
    import asyncio

    return iter(asyncio.run(_read_csup(path)))
