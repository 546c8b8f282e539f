"""Regenerates ``tests/data/real/`` with the real Zed binaries (never builds them).

The input is made here, deterministically, as ZSON text covering every type the
version can hold (every primitive, records, arrays, sets, maps, unions, enums,
named types, errors, nulls at every level, several super types); the real ``zq``
turns it into ZNG/BSUP and VNG files and prints its own JSON of them, which the CI
tests compare this library's reading with.  Run it with the
binaries in ``$CSUP_ASYNC_REAL_TOOLS``::

    CSUP_ASYNC_REAL_TOOLS=/work/tools python -m tests.support.realdata

It rewrites ``tests/data/real/`` except ``README.md`` (which it prints the
table for) and the lake folder (:mod:`tests.support.reallake`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support import realtools
from tests.support.realtools import ZED_1_7, ZED_1_12, Tool

OUT = Path(__file__).resolve().parents[1] / "data" / "real"

ROWS = 300
QUOTED = '\\"q\\" \\\\ tab\\t'


def _row(i: int) -> str:
    """One record of the main super type; nulls placed at every level by ``i``."""
    def maybe(v: str, every: int) -> str:
        return "null" if i % every == every - 1 else v

    neg = -1 if i % 2 else 1
    frac = f"{i * 1234567 % 10**9:09d}"
    ts = f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}T{i % 24:02d}:{i % 60:02d}:00.{frac}Z"
    deep = "{z:" + maybe(str(i % 2 == 0).lower(), 4) + "}"
    rec = "{x:" + maybe(str(i), 3) + ",y:" + _quote(f"y{i % 5}") + ",deep:" + deep + "}"
    mp = "|{" + ",".join(_quote(f"k{k}") + ":" + maybe(str(i * k), 4) for k in range(i % 3)) + "}|"
    err = (maybe("error(" + _quote(f"bad {i % 4}") + ")", 3) if i % 5 == 0
           else "null(error(string))")
    fields = [
        f"u8:{maybe(str(i % 256), 11)}(uint8)",
        f"u16:{i * 211 % 65536}(uint16)",
        f"u32:{i * 100_003 % 4_294_967_296}(uint32)",
        f"u64:{maybe(str(18_446_744_073_709_551_615 - i * 7919), 13)}(uint64)",
        f"i8:{neg * (i % 128)}(int8)",
        f"i16:{neg * (i * 37 % 32768)}(int16)",
        f"i32:{maybe(str(neg * i * 7_000_001 % 2_147_483_647), 17)}(int32)",
        f"i64:{neg * (i * 1_000_000_000_007)}",
        f"dur:{maybe(f'{i}h{i % 60}m{i % 60}.{i:03d}s', 9)}",
        f"ts:{maybe(ts, 19)}",
        f"f16:{(i % 64) / 4 * neg}(float16)",
        f"f32:{(i % 1000) / 8 * neg}(float32)",
        f"f64:{maybe(repr(i / 7 * neg), 23)}",
        f"b:{maybe('true' if i % 3 else 'false', 5)}",
        f"by:{maybe('0x' + bytes([i % 256, (i * 7) % 256, 0]).hex(), 7)}",
        f"s:{maybe(_quote(f'row {i} ' + 'é' * (i % 3) + (QUOTED if i % 50 == 0 else '')), 29)}",
        f"lowcard:{_quote(['red', 'green', 'blue'][i % 3])}",
        f"constant:{_quote('same')}",
        f"ip:{maybe(f'10.{i % 256}.0.{i % 7}' if i % 4 else f'fe80::{i:x}', 31)}",
        f"net:{maybe(f'10.{i % 256}.0.0/16' if i % 4 else 'fe80::/64', 37)}",
        f"t:{maybe('<int64>' if i % 2 else '<{a:[string]}>', 41)}",
        "n:null",
        f"rec:{maybe(rec, 6)}",
        f"arr:{maybe('[' + ','.join(maybe(str(i + k), 5) for k in range(i % 4)) + ']', 8)}",
        f"set:{maybe('|[' + ','.join(_quote(f's{(i + k) % 6}') for k in range(i % 3)) + ']|', 10)}",
        f"map:{maybe(mp, 12)}",
        f"u:{maybe(str(i) if i % 2 else _quote(f'u{i}'), 14)}((int64,string))",
        f"e:{maybe('%' + ['a', 'b', 'c'][i % 3], 15)}(enum(a,b,c))",
        f"port:{maybe(str(1000 + i % 50), 16)}(port=uint16)",
        f"err:{err}",
        f"nested:[{{a:{i},b:[{maybe(_quote('n' + str(i)), 2)}]}}]",
    ]
    return "{" + ",".join(fields) + "}"


def _quote(s: str) -> str:
    return '"' + s + '"'


def long_input(rows: int = 1500) -> str:
    """One record type over many rows, so a column spans several segments (Zed v1.7
    splits at ``-coltresh``; v1.12 writes one segment but dictionaries and constants)."""
    lines = []
    for i in range(rows):
        v = "null(float64)" if i % 9 == 4 else repr(i * 0.5)
        a = "null(int64)" if i % 4 == 1 else str(i % 7)
        tags = ",".join(_quote(f"t{(i + k) % 11}") for k in range(i % 3))
        lines.append(f'{{id:{i},name:{_quote(f"n{i % 500}")},grp:{_quote(f"g{i % 5}")},'
                     f'tags:[{tags}]([string]),v:{v},rec:{{a:{a},k:"k"}}}}')
    return "\n".join(lines) + "\n"


def errors_input(rows: int = 40) -> str:
    """Errors of complex types, which VNG stores as whole bodies in a "primitive"
    column (and v1.12 as dictionaries or constants of them)."""
    lines = []
    for i in range(rows):
        rec = f'error({{code:{i % 3},why:{_quote(f"w{i % 2}")}}})'
        arr = f"error([{i},{i + 1}])" if i % 4 else "null(error([int64]))"
        same = 'error({kind:"fixed"})'
        lines.append(f"{{r:{rec},a:{arr},same:{same},n:{i}}}")
    return "\n".join(lines) + "\n"


def zson_input() -> str:
    """The whole input: the main record type, a second record type, scalars."""
    lines = [_row(i) for i in range(ROWS)]
    lines += [f'{{other:{_quote(f"o{i}")},list:[{{k:{i}}}]}}' for i in range(40)]
    lines += [str(i * 3) for i in range(20)]  # top-level int64 values
    lines += ['"a top-level string"', "null"]
    return "\n".join(lines) + "\n"


#: (output file, tool, zq arguments before the input, which formats to write it as)
def recipes() -> list[tuple[str, Tool, list[str]]]:
    out: list[tuple[str, Tool, list[str]]] = []
    for tool in (ZED_1_7, ZED_1_12):
        v = tool.version.replace(".0", "").lstrip("v")
        out.append((f"zed{v}-all.zng", tool, ["-f", "zng"]))
        if tool is ZED_1_12:
            out.append((f"zed{v}-all-uncompressed.zng", tool,
                        ["-f", "zng", "-zng.compress=false"]))
        out.append((f"zed{v}-all.vng", tool, ["-f", "vng"]))
    # v1.7 splits a column into segments at -coltresh; v1.12 writes one segment
    out.append(("zed1.7-long.vng", ZED_1_7, ["-f", "vng", "-coltresh", "1KiB"]))
    out.append(("zed1.12-long.vng", ZED_1_12, ["-f", "vng"]))
    out.append(("zed1.7-errors.vng", ZED_1_7, ["-f", "vng"]))
    out.append(("zed1.12-errors.vng", ZED_1_12, ["-f", "vng"]))
    out.append(("zed1.7-empty.vng", ZED_1_7, ["-f", "vng"]))
    out.append(("zed1.12-empty.vng", ZED_1_12, ["-f", "vng"]))
    return out


def generate() -> list[tuple[str, str]]:
    """Write the files; each file's JSON (and ZSON) from zq must equal its version's."""
    OUT.mkdir(parents=True, exist_ok=True)
    inputs = {"all": zson_input(), "long": long_input(), "errors": errors_input(), "empty": ""}
    table: list[tuple[str, str]] = []
    printed: dict[tuple[Tool, str, str], bytes] = {}
    for name, tool, args in recipes():
        zq = realtools.find(tool, "zq")
        if zq is None:
            raise SystemExit(f"zq {tool.version} not found under $CSUP_ASYNC_REAL_TOOLS")
        v, which = name.split(".vng")[0].split(".zng")[0].split("-")[:2]
        src = OUT / f"input-{which}.zson"
        src.write_text(inputs[which])
        cmd = [*args, "-o", name, src.name]
        realtools.run(zq, *cmd, cwd=OUT)
        table.append((name, f"zq {tool.version}: `zq {' '.join(cmd)}`"))
        # zq's JSON is the tests' oracle (the ZSON is only checked to be the same
        # for every file of a version and input, not kept: the JSON suffices)
        for flag, ext in (("-j", "json"), ("-z", "zson")):
            got = realtools.run(zq, flag, name, cwd=OUT)
            want = printed.setdefault((tool, which, ext), got)
            if got != want:
                raise SystemExit(f"zq {flag} {name} differs from the first file's output")
            out = OUT / f"{v}-{which}.{ext}"
            if want is got and ext == "json":
                out.write_bytes(got)
                table.append((out.name, f"zq {tool.version}: `zq {flag} {name}` "
                              "(every file of this version made from the same input "
                              "prints the same)"))
        src.unlink()
    # keep one JSON where both versions print the same (only maps print differently)
    for which in inputs:
        old, new = OUT / f"zed1.7-{which}.json", OUT / f"zed1.12-{which}.json"
        if old.exists() and new.exists() and old.read_bytes() == new.read_bytes():
            old.unlink()
            table = [(n, how) for n, how in table if n != old.name]
            table.append((old.name, f"not kept: the same bytes as `{new.name}`"))
    return table


def main() -> int:
    for name, how in generate():
        print(f"| `{name}` | {how} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
