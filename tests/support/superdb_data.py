"""Regenerate tests/data/real/super/ with the real ``super`` binary (never builds it).

Usage: ``CSUP_ASYNC_REAL_TOOLS=DIR python3 -m tests.support.superdb_data``, with the
binaries in ``DIR/super-v0.3.0/`` and ``DIR/super-v0.2.0/``.
The inputs are written here as SUP (or JSON) text, deterministic, so a
regeneration with the same ``super`` gives the same files; ``super`` then writes
each as CSUP and prints its own JSON and BSUP of that CSUP file: the expected
outputs the tests compare every read path against.  The commands are recorded
in the directory's README.md.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from tests.support import realtools

OUT = Path(__file__).resolve().parents[1] / "data" / "real" / "super"


def _prim_row(i: int) -> str:
    """One record of every primitive SuperDB's CSUP holds (several vector kinds: runs of
    repeats become dict or const vectors, distinct values plain ones)."""
    neg = -1 if i % 3 else 1
    parts = [
        f"u8:{i % 256}::uint8", f"u16:{(i * 7) % 65536}::uint16", f"u32:{i * 1000}::uint32",
        f"u64:{(1 << 63) + i}::uint64", f"i8:{neg * (i % 128)}::int8",
        f"i16:{neg * i * 3}::int16", f"i32:{neg * i * 100000}::int32",
        f"i64:{neg * (1 << 40) * i}", f"d:{i * 1500}ms",
        f"t:2024-01-{1 + i % 28:02d}T00:00:{i % 60:02d}Z",
        f"f16:{(i % 8) / 2}::float16", f"f32:{i / 4}::float32", f"f64:{i * 1.25 - 100}",
        f"b:{'true' if i % 3 else 'false'}", f"by:0x{i:04x}",
        f's:"{"long text repeats " * (i % 4)}{i % 5}"',
        f"ip:10.0.{i // 256}.{i % 256}", f"ip6:fe80::{i:x}", f"net:10.{i % 200}.0.0/16",
        f"ty:<{'int64' if i % 2 else '{a:string}'}>",
        "tag:" + ('"x"' if i % 7 == 0 else "null"),
    ]
    return "{" + ",".join(parts) + "}"


def primitives() -> str:
    return "\n".join(_prim_row(i) for i in range(300)) + "\n"


def nested() -> str:
    """Records, arrays, sets, maps, unions, enums, named types, errors and nulls at every
    level, over several super types (the file's root is then a dynamic vector)."""
    rows = []
    for i in range(300):
        k = i % 6
        if k == 0:
            rows.append(f'{{id:{i},p:{{x:{i},y:{i * 2}}}::=point,tags:["a{i % 3}","b"],'
                        f'set:|[{i % 4},{i % 5}]|,m:|{{"k{i % 3}":{i}}}|}}')
        elif k == 1:
            rows.append(f'{{id:{i},u:{i if i % 2 else chr(34) + "s" + chr(34)}::(int64|string),'
                        f'e:"{"abc"[i % 3]}"::enum(a,b,c),err:error("bad {i % 4}")}}')
        elif k == 2:
            rows.append(f'{{id:{i},arr:[{i},null,"x{i % 2}"],rec:{{inner:{{deep:{i}}},n:null}},'
                        f'nr:[{{a:{i}}},{{a:null}}]}}')
        elif k == 3:
            rows.append(f'{{id:{i},mm:|{{{{k:{i % 2}}}:[{i}]}}|,ss:|["a","b{i % 2}"]|}}')
        elif k == 4:
            rows.append(f"{i}" if i % 4 else '"a plain string"')
        else:
            rows.append(f'{{id:{i},ar:[],rec:{{inner:null,n:"n{i}"}},e2:error({{code:{i}}})}}')
    return "\n".join(rows) + "\n"


def nulls() -> str:
    """Nulls at the top, in fields, in arrays and in unions, and a null-only file part."""
    rows = []
    for i in range(200):
        rows.append("null" if i % 10 == 0 else
                    f'{{a:{"null" if i % 3 == 0 else i},b:[{"null," if i % 2 else ""}{i}],'
                    f'c:{{d:{"null" if i % 4 == 0 else chr(34) + str(i) + chr(34)}}}}}')
    return "\n".join(rows) + "\n"


def objects() -> str:
    """250,000 rows: three objects (super cuts an object at 120,000 values) and two
    record types, compressible so the file stays small (about 50 KB)."""
    lines = []
    for i in range(250_000):
        row = ({"n": i // 100, "s": "a"} if i < 130_000 else
               {"n": i // 100, "b": (i // 500) % 2 == 0})
        lines.append(json.dumps(row, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def optional() -> str:
    """Records of optional fields (``x?:int64``): absent in runs of every length, nested."""
    rows = []
    for i in range(90):  # one of super's 100-row input batches: see broken_runs
        parts = []
        if i % 3:
            parts.append(f"x:{i}")
        if (i // 4) % 2 == 0:
            parts.append(f'y:"y{i % 9}"')
        if i % 5 != 4:
            parts.append("z:{" + (f"w:{i / 8}" if i % 2 else "") + "}")
        rows.append("{" + ",".join(parts) + "}")
    return "\n".join(rows) + "\n"


def fusion() -> str:
    """Records of several shapes that ``fuse`` makes one fusion type."""
    shapes = ['{{a:{i},b:"b{i}"}}', "{{a:{i}}}", '{{c:"c{i}",b:"x"}}', "{{d:{{e:{i}}}}}"]
    return "\n".join(shapes[i % 4].format(i=i) for i in range(100)) + "\n"


def broken_runs() -> str:
    """200 rows of optional fields: super v0.3.0 concatenates the none runs of its
    100-row input batches, breaking their alternation, and then misreads its own
    file from row 100 on; a reader must refuse it, not return wrong rows."""
    return "\n".join("{" + (f"x:{i}," if i % 3 else "") + f"n:{i}" + "}"
                     for i in range(200)) + "\n"


INPUTS = {"primitives": ("sup", primitives), "nested": ("sup", nested),
          "nulls": ("sup", nulls), "objects": ("json", objects),
          "optional": ("sup", optional), "fusion": ("sup", fusion),
          "broken_runs": ("sup", broken_runs)}
QUERIES = {"optional": "cast(this, <{x?:int64,y?:string,z?:{w?:float64}}>)",
           "fusion": "fuse", "broken_runs": "cast(this, <{x?:int64,n:int64}>)"}


def commands(name: str, ext: str) -> list[list[str]]:
    query = ["-c", QUERIES[name]] if name in QUERIES else []
    return [["super", "-f", "csup", *query, "-o", f"{name}.csup", f"{name}.input.{ext}"],
            # super v0.3.0's JSON writer panics on absent (none) fields: SUP for those
            ["super", "-s", "-o", f"{name}.output.sup", f"{name}.csup"] if name in QUERIES
            else ["super", "-j", "-o", f"{name}.json", f"{name}.csup"],
            ["super", "-f", "bsup", "-bsup.compress=false", "-o", f"{name}.bsup",
             f"{name}.csup"]]


#: Files super v0.2.0 (header version 14, BSUP version 1) writes too, into v0.2.0/.
OLDER = ("primitives", "nested", "nulls", "optional")


def older(binary: str) -> None:
    out = OUT / "v0.2.0"
    out.mkdir(exist_ok=True)
    for name in OLDER:
        ext = INPUTS[name][0]
        for cmd in commands(name, ext):
            args = [a.replace(f"{name}.input.{ext}", f"../{name}.input.{ext}") for a in cmd[1:]]
            subprocess.run([binary, *args], cwd=out, check=True)


def main() -> int:
    found = realtools.find(realtools.SUPER_0_3, "super")
    if found is None:
        print("super v0.3.0 not found: set CSUP_ASYNC_REAL_TOOLS (this script never builds it)",
              file=sys.stderr)
        return 2
    binary = str(found)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (ext, make) in INPUTS.items():
        text = make()
        big = name == "objects"
        src = OUT / f"{name}.input.{ext}"
        src.write_text(text)
        for cmd in commands(name, ext):
            subprocess.run([binary, *cmd[1:]], cwd=OUT, check=True)
        if big:  # the inputs and JSON of 250,000 rows: kept compressed
            out = OUT / f"{name}.json"
            out.with_name(out.name + ".gz").write_bytes(gzip.compress(out.read_bytes(), mtime=0))
            for p in (src, out, OUT / f"{name}.bsup"):
                p.unlink()
    v2 = realtools.find(realtools.SUPER_0_2, "super")
    if v2 is not None:
        older(str(v2))
    else:
        print("super v0.2.0 not found: v0.2.0/ left as it is", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
