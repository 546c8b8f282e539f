"""Files csup-async writes for the constructs its target writers once refused, and what
the real tools print of them (never builds a tool).

- ``optional``: records with optional fields (``x?:T``) for ``super-0.3`` (CSUP v16,
  BSUP 2), read by super v0.3.0;
- ``dicts``: columns of few distinct values (dictionaries) and of one value (constants)
  for ``zed-1.12`` (VNG v3), read by zq v1.12.0;
- ``fusion``: fusion values naming their subtypes for ``super-0.3``;
- ``super-NAME``: super v0.3.0's own BSUP files with fusion values and optional fields
  (tests/data/real/super/) converted to ``super-0.3`` by ``convert``: the tool's BSUP of
  ours (``.out``) must be the bytes of its BSUP of the original (``super-NAME.orig.out``).

Usage: ``python3 -m tests.support.targets_gaps``.  Writes under
``tests/data/real/targets/gaps/``: ``NAME.TARGET.{csup,vng,bsup}`` (ours), ``.out``
(the tool's own BSUP/ZNG of what it read, uncompressed) and ``.json`` (its ``-j``; not
for ``optional``: super v0.3.0's JSON writer prints an absent optional field as a zero
value, or panics on a bool one, even for its own files).
tests/unit/writers/test_targets_gaps.py compares them with the inputs, type for type.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from csup_async.format.superdb.bsup2 import OptField
from csup_async.model.types import PRIMITIVE_BY_NAME as P
from csup_async.model.types import ArrayType, EnumType, Field, RecordType
from csup_async.model.values import Value
from tests.support import targets_data

OUT = Path(__file__).resolve().parents[1] / "data" / "real" / "targets" / "gaps"
I64, STR = P["int64"], P["string"]


def optional() -> list[Value]:
    """Rows of one record type with optional fields absent in runs of every shape
    (first row absent, last row absent, alone, all absent, never absent), a nested
    record with its own optional field, and a second record type."""
    inner = RecordType((OptField("w", P["float64"]), Field("k", STR)))
    t = RecordType((OptField("x", I64), OptField("y", STR), Field("z", I64),
                    OptField("never", P["bool"]), OptField("always", I64),
                    OptField("r", inner), OptField("a", ArrayType(I64))))
    rows = []
    for i in range(40):
        v: dict = {"z": i, "always": i * 10}
        if i % 3:
            v["x"] = i
        if i % 7 in (2, 3, 4) or i == 39:
            v["y"] = f"y{i}"
        if i % 5 == 0:
            v["r"] = {"k": f"k{i}"} | ({"w": i / 8} if i % 10 else {})
        if 10 <= i < 20:
            v["a"] = list(range(i % 4))
        rows.append(Value(t, v))
    t2 = RecordType((OptField("only", STR),))
    rows += [Value(t2, {}), Value(t2, {"only": "o"}), Value(t2, {})]
    return rows


def dicts() -> list[Value]:
    """Columns with few distinct values (a dictionary each), one value (a constant),
    one value and nulls, all nulls, more than 256 distinct values (no dictionary)."""
    color = EnumType(("red", "green", "blue"))
    t = RecordType((Field("cat", STR), Field("k", I64), Field("same", STR),
                    Field("samen", I64), Field("nulls", I64), Field("many", I64),
                    Field("f", P["float64"]), Field("e", color), Field("b", P["bool"]),
                    Field("ip", P["ip"])))
    import ipaddress

    rows = []
    for i in range(600):
        rows.append(Value(t, {
            "cat": ("green", "red", "blue", None)[i % 4], "k": i % 7 - 3, "same": "s",
            "samen": 5 if i % 9 else None, "nulls": None, "many": i * 3,
            "f": (0.5, -1.25, 2.5)[i % 3], "e": ("red", "blue")[i % 2],
            "b": bool(i % 5), "ip": ipaddress.ip_address(f"10.0.0.{i % 3}")}))
    return rows


def fusion() -> list[Value]:
    """Fusion values of one supertype of optional fields, each naming its subtype
    (field order of its own, some fields absent), and a fusion of a union."""
    from csup_async.format.superdb.bsup2 import FusionType
    from csup_async.model.types import UnionType

    sup = RecordType((OptField("a", I64), OptField("b", STR),
                      OptField("d", RecordType((Field("e", I64),)))))
    ft = FusionType(sup)
    subs = [RecordType((Field("a", I64), Field("b", STR))), RecordType((Field("a", I64),)),
            RecordType((Field("b", STR), Field("a", I64))),
            RecordType((Field("d", RecordType((Field("e", I64),))),))]
    rows = []
    for i in range(24):
        sub = subs[i % 4]
        v = {f.name: (i if f.type == I64 else {"e": i} if f.name == "d" else f"b{i}")
             for f in sub.fields}
        rows.append(Value(ft, Value(sub, v)))
    ut = FusionType(UnionType((I64, STR)))
    rows += [Value(ut, Value(I64, 5)), Value(ut, Value(STR, "s"))]
    return rows


#: SuperDB v0.3.0's own BSUP files (tests/data/real/super/) converted by ``convert
#: --target super-0.3`` (their values as they are); the tool's BSUP of each, and of the
#: original, are committed: they must be the same bytes.
FROM_SUPER = ("fusion", "optional", "broken_runs")
SUPER_FILES = OUT.parent.parent / "super"


def converted(name: str, kind: str) -> bytes:
    from csup_async.writers.converting import exact_values
    from csup_async.writers.targets.output import write_bsup, write_csup

    out = io.BytesIO()
    vals = exact_values(str(SUPER_FILES / f"{name}.bsup"))
    if kind == "csup":
        write_csup(out, vals, "super-0.3")
    else:
        write_bsup(out, vals, "super-0.3", compress=False)
    return out.getvalue()


def converted_path(name: str, kind: str) -> Path:
    return OUT / f"super-{name}.super-0.3.{kind}"


#: name -> (values, the targets written)
INPUTS = {"optional": (optional, ("super-0.3",)), "dicts": (dicts, ("zed-1.12",)),
          "fusion": (fusion, ("super-0.3",))}


def written(name: str, target: str, kind: str) -> bytes:
    from csup_async.writers.targets.output import write_bsup, write_csup

    out = io.BytesIO()
    vals = INPUTS[name][0]()
    if kind == "csup":
        write_csup(out, vals, target)
    else:
        write_bsup(out, vals, target, compress=False)
    return out.getvalue()


def path_of(name: str, target: str, kind: str) -> Path:
    ext = targets_data.TOOLS[target][2] if kind == "csup" else "bsup"
    return OUT / f"{name}.{target}.{ext}"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (_, targets) in INPUTS.items():
        for target in targets:
            for kind in ("csup", "bsup"):
                path = path_of(name, target, kind)
                path.write_bytes(written(name, target, kind))
                # (super v0.3.0's -j prints an absent optional field as a zero value,
                # or panics on a bool one: its BSUP is the oracle there)
                outs = targets_data.tool_outputs(target, path, json=name == "dicts")
                if outs is None:
                    print(f"{target}: no binary, {path.name} written without outputs")
                    continue
                (path.parent / (path.name + ".out")).write_bytes(outs[0])
                if outs[1]:
                    (path.parent / (path.name + ".json")).write_bytes(outs[1])
                print(f"{path.name}: {len(outs[0])} bytes of tool output")
    for name in FROM_SUPER:
        orig = SUPER_FILES / f"{name}.bsup"
        outs = targets_data.tool_outputs("super-0.3", orig, json=False)
        if outs is None:
            print("super v0.3.0: no binary, conversions written without outputs")
        else:
            (OUT / f"super-{name}.orig.out").write_bytes(outs[0])
        for kind in ("csup", "bsup"):
            path = converted_path(name, kind)
            path.write_bytes(converted(name, kind))
            outs = targets_data.tool_outputs("super-0.3", path, json=False)
            if outs is not None:
                (path.parent / (path.name + ".out")).write_bytes(outs[0])
                print(f"{path.name}: {len(outs[0])} bytes of tool output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
