"""What a real Zed or SuperDB tool prints for a file: the oracle of the conformance tests.

Given a file and a tool, :func:`printed` runs the tool (when its binary is built,
see :mod:`tests.support.realtools`) and returns its JSON (``-j``), its text (``-s``
for ``super``, ``-z`` for ``zq``) and its uncompressed binary rendering of the same
values (BSUP; ZNG for ``zq``), which holds every value with its exact type.  Without
the binary it falls back to what was committed beside the file (see
:func:`save`), so CI judges without the tools; with neither it returns ``None``.

:func:`expected` decodes that binary rendering into typed values where this library
reads its version (zq's ZNG, BSUP 1 and 2), and :func:`judge` compares what this
library read from a file with the tool's output, value for value and type for type:
``None`` when they agree, else one line saying where they first differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import realtools
from tests.support.realtools import Tool


@dataclass(frozen=True)
class Oracle:
    """A real tool as a judge: how to run it and how its outputs are named."""

    name: str         # the folder name of its files: super-main, super-0.3, zq-1.12 ...
    tool: Tool
    command: str      # super or zq
    bsup_version: int  # the version of the BSUP (ZNG) it prints: 5, 2, 1 or 0
    text_ext: str     # sup or zson
    #: Whether the binary rendering defuses (super main's ``defuse``): super main's text
    #: and JSON writers defuse every fusion value (its ``-fusion`` flag says so), its BSUP
    #: writer keeps them, and csup-async reads values as super prints them.
    defuse: bool = False

    @property
    def binary_ext(self) -> str:
        return "zng" if self.command == "zq" else "bsup"

    def argv(self, what: str, path: Path) -> list[str]:
        """The tool's arguments that print ``what`` (json, text, binary) of ``path``."""
        if what == "json":
            return ["-j", str(path)]
        if what == "text":
            return ["-z" if self.command == "zq" else "-s", str(path)]
        if self.command == "zq":
            return ["-f", "zng", "-zng.compress=false", str(path)]
        query = ["-c", "values defuse(this)"] if self.defuse else []
        return ["-f", "bsup", "-bsup.compress=false", *query, str(path)]


SUPER_MAIN = Oracle("super-main", realtools.SUPER_MAIN, "super", 5, "sup", defuse=True)
SUPER_0_3 = Oracle("super-0.3", realtools.SUPER_0_3, "super", 2, "sup")
SUPER_0_2 = Oracle("super-0.2", realtools.SUPER_0_2, "super", 1, "sup")
ZQ_1_12 = Oracle("zq-1.12", realtools.ZED_1_12, "zq", 0, "zson")
ZQ_1_7 = Oracle("zq-1.7", realtools.ZED_1_7, "zq", 0, "zson")
ORACLES = {o.name: o for o in (SUPER_MAIN, SUPER_0_3, SUPER_0_2, ZQ_1_12, ZQ_1_7)}


@dataclass(frozen=True)
class Printed:
    """What the tool printed for one file (or ``error``: the tool refused the file)."""

    oracle: str
    json: list[Any] | None  # None: the tool could not print JSON (NaN, infinities)
    text: str
    binary: bytes
    live: bool        # run now (True) or read from the committed files (False)
    error: str | None = None
    json_error: str | None = None  # why json is None


def committed_paths(oracle: Oracle, path: Path) -> dict[str, Path]:
    """Where :func:`save` keeps the tool's outputs for ``path``: beside it, named
    ``<file>.<oracle>.json`` / ``.sup`` (``.zson``) / ``.bsup`` (``.zng``) / ``.error``,
    and ``.json-error`` where the tool prints the values but not as JSON."""
    base = f"{path.name}.{oracle.name}"
    return {"json": path.with_name(base + ".json"),
            "json-error": path.with_name(base + ".json-error"),
            "text": path.with_name(base + "." + oracle.text_ext),
            "binary": path.with_name(base + "." + oracle.binary_ext),
            "error": path.with_name(base + ".error")}


def run(oracle: Oracle, path: Path) -> Printed | None:
    """Run the real tool on ``path`` now; ``None`` when its binary is not built."""
    binary = realtools.find(oracle.tool, oracle.command)
    if binary is None:
        return None
    out: dict[str, bytes | None] = {}
    json_error: str | None = None
    for what in ("binary", "text", "json"):
        try:
            out[what] = realtools.run(binary, *oracle.argv(what, path))
        except RuntimeError as e:
            if what != "json":
                return Printed(oracle.name, None, "", b"", True, _first_line(str(e), binary))
            out[what], json_error = None, _first_line(str(e), binary)
    js = out["json"]
    return Printed(oracle.name, None if js is None else _lines(js.decode()),
                   (out["text"] or b"").decode(), out["binary"] or b"", True,
                   json_error=json_error)


def _lines(text: str) -> list[Any]:
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def _first_line(message: str, binary: Path) -> str:
    """The tool's complaint (a Go panic's first line), without this machine's paths."""
    lines = message.splitlines()
    line = next((ln for ln in lines if ln.startswith("panic:")), lines[-1] if lines else "")
    return line.replace(str(binary.parent), "").strip()


def committed(oracle: Oracle, path: Path) -> Printed | None:
    """What :func:`save` kept for ``path``, or ``None``."""
    at = committed_paths(oracle, path)
    if at["error"].is_file():
        return Printed(oracle.name, None, "", b"", False, at["error"].read_text().strip())
    if not all(at[k].is_file() for k in ("text", "binary")):
        return None
    if at["json-error"].is_file():
        js, why = None, at["json-error"].read_text().strip()
    elif at["json"].is_file():
        js, why = _lines(at["json"].read_text()), None
    else:
        return None
    return Printed(oracle.name, js, at["text"].read_text(), at["binary"].read_bytes(), False,
                   json_error=why)


def printed(oracle: Oracle | str, path: Path, *, live: bool = True) -> Printed | None:
    """The tool's output for ``path``: run now when the binary is there (and ``live``),
    else the committed outputs, else ``None``."""
    o = ORACLES[oracle] if isinstance(oracle, str) else oracle
    got = run(o, path) if live else None
    return got if got is not None else committed(o, path)


def save(p: Printed, oracle: Oracle, path: Path) -> None:
    """Commit-ready copies of ``p`` beside ``path`` (an error replaces the outputs)."""
    at = committed_paths(oracle, path)
    for f in at.values():
        f.unlink(missing_ok=True)
    if p.error is not None:
        at["error"].write_text(p.error + "\n")
        return
    if p.json is None:
        at["json-error"].write_text(f"{p.json_error}\n")
    else:
        at["json"].write_text("".join(json.dumps(v, ensure_ascii=False) + "\n"
                                      for v in p.json))
    at["text"].write_text(p.text)
    at["binary"].write_bytes(p.binary)


def expected(p: Printed, oracle: Oracle) -> list[tuple[Any, Any]] | None:
    """The tool's values as ``(type, typed value)``, decoded from its binary output,
    or ``None`` where this library does not read that BSUP version (yet)."""
    if oracle.bsup_version == 0:
        from csup_async.format.bsup import read_values

        return [(v.type, v.value) for v in read_values(p.binary)]
    from csup_async.format.superdb import bsup2

    if oracle.bsup_version == 5:
        try:  # super main's BSUP: read where the v23 reader (issue #37) has landed
            from csup_async.format.superdb import bsup5  # type: ignore[attr-defined]
        except ImportError:
            return None
        return [(t, bsup5.decode_value(t, b, typed=True, empty=True)) for t, b in
                bsup5.read_values(p.binary)]
    dialect = {1: bsup2.V1, 2: bsup2.V2}.get(oracle.bsup_version)
    if dialect is None:
        return None
    return [(t, bsup2.decode_value(t, b, dialect=dialect, typed=True))
            for t, b in bsup2.read_values(p.binary, dialect)]


def as_json(oracle: Oracle, t: Any, v: Any) -> Any:
    """What the tool's ``-j`` prints for a typed value this library read."""
    if oracle.command == "zq":
        from tests.support.zedjson import zed_json

        return zed_json(t, v, map_as_records=oracle.tool.version == "v1.7.0")
    from tests.support.superjson import super_json

    return super_json(t, v, main=oracle.name == "super-main")


def judge(values: list[tuple[Any, Any]], p: Printed, oracle: Oracle) -> str | None:
    """``None`` if ``values`` (``(type, typed value)`` as read here) are what the tool
    printed, type for type where its binary output is readable here and JSON for JSON
    always; else where they first differ."""
    want = expected(p, oracle)
    if want is not None:
        if len(want) != len(values):
            return f"{len(values)} values read, the tool has {len(want)}"
        for i, ((t, v), (wt, wv)) in enumerate(zip(values, want, strict=True)):
            if t != wt:
                return f"value {i}: type {t} read, the tool has {wt}"
            if not same(v, wv):
                return f"value {i}: {v!r} read, the tool has {wv!r}"
    if p.json is None:
        return None if want is not None else "no JSON and no readable BSUP to judge by"
    got = [as_json(oracle, t, v) for t, v in values]
    if len(got) != len(p.json):
        return f"{len(got)} values read, the tool's JSON has {len(p.json)}"
    for i, (g, w) in enumerate(zip(got, p.json, strict=True)):
        if want is not None and _has_optional(values[i][0]):
            continue  # super v0.3.0 prints an absent field as "" or panics: BSUP judges
        if not same(g, w):
            return f"value {i}: JSON {json.dumps(g, default=str)} read, the tool prints " \
                   f"{json.dumps(w)}"
    return None


def _has_optional(t: Any, depth: int = 0) -> bool:
    """Whether a type has an optional field anywhere (whose JSON super gets wrong)."""
    from csup_async.format.superdb.bsup2 import FusionType, OptField

    if depth > 50 or isinstance(t, FusionType):
        return True
    fields = getattr(t, "fields", None)
    if fields and any(isinstance(f, OptField) for f in fields):
        return True
    kids = [f.type for f in fields or ()] + [getattr(t, a) for a in
                                             ("elem", "inner", "key", "value")
                                             if hasattr(t, a)]
    kids += list(getattr(t, "types", ()) or ())
    return any(_has_optional(k, depth + 1) for k in kids)


def same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN (both sides may hold float NaN)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if _is_nat(a) and _is_nat(b):  # a null time or duration in a CSV's column
        return True
    if isinstance(a, float) and isinstance(b, int) and not isinstance(b, bool):
        return a == float(b)  # Go's JSON prints a float64 of 1e18 without its exponent
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return repr(a) == repr(b)


def _is_nat(x: Any) -> bool:
    import numpy as np

    return isinstance(x, np.datetime64 | np.timedelta64) and bool(np.isnat(x))
