"""What csup-async writes for each target, and what that target's real tool prints of it.

Usage: ``python3 -m tests.support.targets_data`` (runs binaries found by
:mod:`tests.support.realtools`; never builds them).  For each input of
:func:`inputs` (deterministic ``Value``s) and each target it writes, under
``tests/data/real/targets/``:

- ``NAME.TARGET.csup`` (CSUP/VNG) and ``NAME.TARGET.bsup`` (BSUP of the target's
  version): written by csup-async (``csup_async.writers.targets.output``);
- ``NAME.TARGET.csup.out`` / ``NAME.TARGET.bsup.out``: the tool's own binary of what
  it read (``super -f bsup -bsup.compress=false``: BSUP 5 for super (main), BSUP 2 for
  super-0.3; ``zq -f zng
  -zng.compress=false`` for zed-1.12, ZNG), the exact types and values it saw;
- ``.json``: the tool's ``-j`` of the same file.

tests/unit/writers/test_targets_real.py compares these with the inputs, type for
type (and runs the tools again when they are built).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import subprocess
import sys
from pathlib import Path

from csup_async.model.types import (
    PRIMITIVE_BY_NAME as P,
)
from csup_async.model.types import (
    ArrayType,
    EnumType,
    ErrorType,
    Field,
    MapType,
    NamedType,
    RecordType,
    SetType,
    UnionType,
)
from csup_async.model.values import UnionValue, Value
from tests.support import realtools

OUT = Path(__file__).resolve().parents[1] / "data" / "real" / "targets"

#: target -> (tool, command, extension of its columnar file)
SUPER_MAIN = realtools.Tool("super", "github.com/brimdata/super", "main")
TOOLS = {
    "super": (SUPER_MAIN, "super", "csup"),
    "super-0.3": (realtools.SUPER_0_3, "super", "csup"),
    "zed-1.12": (realtools.ZED_1_12, "zq", "vng"),
}


def _prim_row(i: int) -> Value:
    names = ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "dur", "t", "f16", "f32",
             "f64", "b", "by", "s", "ip", "ip6", "net"]
    tnames = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
              "duration", "time", "float16", "float32", "float64", "bool", "bytes", "string",
              "ip", "ip", "net"]
    neg = -1 if i % 3 else 1
    vals = [i % 256, (i * 7) % 65536, i * 1000, (1 << 63) + i, neg * (i % 128), neg * i * 3,
            neg * i * 100000, neg * (1 << 40) * i, i * 1_500_000_000,
            dt.datetime(2024, 1, 1 + i % 28, 0, 0, i % 60, tzinfo=dt.UTC),
            (i % 8) / 2, i / 4, i * 1.25 - 100, bool(i % 3), i.to_bytes(2, "big"),
            f"text {i % 5}", ipaddress.ip_address(f"10.0.{i // 256}.{i % 256}"),
            ipaddress.ip_address(f"fe80::{i:x}"), ipaddress.ip_network(f"10.{i % 200}.0.0/16")]
    if i % 5 == 0:
        vals[i % len(vals)] = None  # a typed null in every column, somewhere
    t = RecordType(tuple(Field(n, P[tn]) for n, tn in zip(names, tnames, strict=True)))
    return Value(t, dict(zip(names, vals, strict=True)))


def primitives() -> list[Value]:
    return [_prim_row(i) for i in range(120)]


POINT = NamedType("point", RecordType((Field("x", P["int64"]), Field("y", P["int64"]))))
U = UnionType((P["int64"], P["string"]))
E = EnumType(("a", "b", "c"))


def nested() -> list[Value]:
    """Records, arrays, sets, maps, unions, enums, named types, errors, nulls at
    several levels, and top-level values that are not records."""
    out: list[Value] = []
    for i in range(120):
        k = i % 6
        if k == 0:
            t = RecordType((Field("id", P["int64"]), Field("p", POINT),
                            Field("tags", ArrayType(P["string"])),
                            Field("set", SetType(P["int64"])),
                            Field("m", MapType(P["string"], P["int64"]))))
            out.append(Value(t, {"id": i, "p": {"x": i, "y": i * 2},
                                 "tags": [f"a{i % 3}", "b"] if i % 4 else [],
                                 "set": sorted({i % 4, i % 5}),
                                 "m": {f"k{i % 3}": i}}))
        elif k == 1:
            t = RecordType((Field("id", P["int64"]), Field("u", U), Field("e", E),
                            Field("err", ErrorType(P["string"]))))
            u = UnionValue(0, P["int64"], i) if i % 2 else UnionValue(1, P["string"], "s")
            out.append(Value(t, {"id": i, "u": u, "e": "abc"[i % 3], "err": f"bad {i % 4}"}))
        elif k == 2:
            t = RecordType((Field("id", P["int64"]),
                            Field("r", RecordType((Field("a", ArrayType(P["float64"])),
                                                   Field("s", P["string"]))))))
            out.append(Value(t, {"id": i, "r": None if i % 4 == 2 else
                                 {"a": [i / 2, i / 4], "s": None if i % 3 else "z"}}))
        elif k == 3:
            out.append(Value(P["int64"], i))
        elif k == 4:
            out.append(Value(P["string"], f"top {i}"))
        else:
            t = ArrayType(RecordType((Field("k", P["string"]), Field("v", P["int64"]))))
            out.append(Value(t, [{"k": "x", "v": i}, {"k": "y", "v": None}]))
    return out


def long() -> list[Value]:
    t = RecordType((Field("id", P["int64"]), Field("grp", P["string"]),
                    Field("val", P["float64"])))
    return [Value(t, {"id": i, "grp": f"g{i % 5}", "val": None if i % 7 == 0 else i * 0.5})
            for i in range(2500)]


def inputs() -> dict[str, list[Value]]:
    return {"primitives": primitives(), "nested": nested(), "long": long()}


def written(name: str, target: str, kind: str) -> bytes:
    """What csup-async writes of input ``name`` for ``target`` (``kind``: csup or bsup)."""
    import io

    from csup_async.writers.targets.output import write_bsup, write_csup

    buf = io.BytesIO()
    vals = inputs()[name]
    if kind == "bsup":
        write_bsup(buf, vals, target, compress=False)
    else:
        write_csup(buf, vals, target)
    return buf.getvalue()


def tool_outputs(target: str, path: Path, *, json: bool = True) -> tuple[bytes, bytes] | None:
    """(binary of the values, -j) the target's tool prints of ``path``; None without it.
    ``json=False``: the binary only (JSON has no infinities: the tools refuse them)."""
    tool, cmd, _ = TOOLS[target]
    exe = realtools.find(tool, cmd)
    if exe is None:
        return None
    if target.startswith("super"):
        binary = ["-f", "bsup", "-bsup.compress=false"]
    else:
        binary = ["-f", "zng", "-zng.compress=false"]
    b = subprocess.run([str(exe), *binary, "-o", "-", str(path)], check=True,
                       capture_output=True, timeout=120).stdout
    if not json:
        return b, b""
    j = subprocess.run([str(exe), "-j", str(path)], check=True, capture_output=True,
                       timeout=120).stdout
    return b, j


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for target, (_, _, ext) in TOOLS.items():
        for name in inputs():
            for kind in ("csup", "bsup"):
                path = OUT / f"{name}.{target}.{ext if kind == 'csup' else 'bsup'}"
                path.write_bytes(written(name, target, kind))
                outs = tool_outputs(target, path)
                if outs is None:
                    print(f"{target}: no binary, {path.name} written without outputs")
                    continue
                (path.parent / (path.name + ".out")).write_bytes(outs[0])
                (path.parent / (path.name + ".json")).write_bytes(outs[1])
                print(f"{path.name}: {len(outs[0])} bytes of tool output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
