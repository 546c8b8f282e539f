"""The conformance corpus: SuperDB's and Zed's own ztest inputs, written by each real
writer, with what that writer's tool prints for every file it wrote.

Run by hand where the binaries are built (never in CI, which judges with what this
wrote into ``tests/data/real/conformance/``)::

    python3 -m tests.support.conformance_data select   # inputs/ from the snapshots' ztests
    python3 -m tests.support.conformance_data write    # <writer>/ files and tool outputs
    python3 -m tests.support.conformance_data ours     # csup-async's BSUP of zq's files, zq's JSON
    python3 -m tests.support.conformance_data table    # how csup-async reads them
    python3 -m tests.support.conformance_data add super NAME...  # whole inputs, added

``select`` reads the ``*.yaml`` ztests of super main (492eab8) and zq v1.12.0 from the
snapshots (``$CSUP_ASYNC_SNAPSHOTS``), has the tool itself parse each input (SUP,
JSON; ZSON for zq) and keeps, greedily, the inputs that add a type construct not seen
yet (every primitive, records, arrays, sets, maps, unions, enums, errors, named types,
optional fields and fusion types, and each construct nested in each other), each cut
to its first values, so the corpus stays a few hundred values.  ``write`` runs every
writer of :data:`WRITERS` over the inputs of its family and saves the tool's
JSON/text/BSUP of each file (:mod:`tests.support.oracle`); an input a writer cannot
parse (newer syntax) is listed in the writer's ``MANIFEST.json`` and written by none.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.support import oracle as oracles
from tests.support import realtools

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "real" / "conformance"
MAX_VALUES = 12      # of one input
MAX_BYTES = 4096     # of one input's canonical text
REPEAT = 3           # how many chosen inputs should hold each type construct
#: The ztests of the formats themselves, kept whatever they cover.
ALWAYS = ("csup-", "sio-bsupio", "sio-csupio", "zio-vngio", "zio-zngio", "vng-")


@dataclass(frozen=True)
class Writer:
    """A real writer: its oracle (the same tool reads its files back) and formats."""

    oracle: oracles.Oracle
    family: str                  # which inputs: super (SUP) or zed (ZSON)
    formats: tuple[str, ...]     # file extensions it writes: csup/bsup or vng/zng
    versions: dict[str, int]     # the format version of each


WRITERS = {w.oracle.name: w for w in (
    Writer(oracles.SUPER_MAIN, "super", ("csup", "bsup"), {"csup": 23, "bsup": 5}),
    Writer(oracles.SUPER_0_3, "super-0.3", ("csup", "bsup"), {"csup": 16, "bsup": 2}),
    Writer(oracles.SUPER_0_2, "super-0.3", ("csup", "bsup"), {"csup": 14, "bsup": 1}),
    Writer(oracles.ZQ_1_12, "zed", ("vng", "zng"), {"vng": 3, "zng": 0}),
    Writer(oracles.ZQ_1_7, "zed", ("vng", "zng"), {"vng": 2, "zng": 0}),
)}

#: Where each family's inputs come from: the writer whose snapshot and binary select them
#: (SUP changed its syntax of type values after v0.3.0, so v0.3.0's ztests feed the
#: released writers of SuperDB).
SOURCES = {"super": oracles.SUPER_MAIN, "super-0.3": oracles.SUPER_0_3,
           "zed": oracles.ZQ_1_12}
INPUT_EXT = {"super": "sup", "super-0.3": "sup", "zed": "zson"}


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                          check=True).stdout


def ztest_inputs(tool: realtools.Tool) -> list[tuple[str, str, str]]:
    """``(name, format, text)`` of every input in the snapshot's ztests that is
    SUP/ZSON or JSON (the formats whose values are the test's own data)."""
    import yaml

    repo = realtools.snapshot(tool)
    if repo is None:
        raise SystemExit(f"no snapshot of {tool.repo}")
    rev = tool.rev
    out = []
    for path in _git(repo, "ls-tree", "-r", "--name-only", rev).decode().split("\n"):
        if not path.endswith(".yaml") or "ztests" not in path:
            continue
        try:
            doc = yaml.safe_load(_git(repo, "show", f"{rev}:{path}"))
        except (yaml.YAMLError, subprocess.CalledProcessError):
            continue
        if not isinstance(doc, dict) or doc.get("skip"):
            continue
        stem = re.sub(r"[^A-Za-z0-9_-]", "_",
                      path.removesuffix(".yaml").replace("/ztests", "").replace("/", "-"))
        flags = doc.get("input-flags") or ""
        if isinstance(doc.get("input"), str) and flags in ("", "-i json"):
            out.append((stem, "json" if flags else "auto", doc["input"]))
        for i, item in enumerate(doc.get("inputs") or []):
            name, data = str(item.get("name", "")), item.get("data")
            if not isinstance(data, str):
                continue
            ext = name.rsplit(".", 1)[-1] if "." in name else name
            if ext in ("sup", "jsup", "zson", "json", "stdin"):
                fmt = "json" if ext == "json" else "auto"
                out.append((f"{stem}-{i}", fmt, data))
    return out


_PRIMS = re.compile(r"\b(u?int(?:8|16|32|64)|float(?:16|32|64)|bool|bytes|string|ip|net|"
                    r"type|null|none|duration|time|all)\b")


def features(type_text: str, sup: bool) -> set[str]:
    """The type constructs of one value's type (its text as the tool prints it),
    each also paired with the construct it is nested in."""
    out: set[str] = set()
    if not type_text.startswith("{"):
        out.add("top:" + (type_text[:1] if not type_text[:1].isalpha() else "prim"))
    stack = ["top"]
    i, n = 0, len(type_text)
    while i < n:
        c = type_text[i]
        m = _PRIMS.match(type_text, i) if c.isalpha() else None
        if m and (i == 0 or not (type_text[i - 1].isalnum() or type_text[i - 1] == "_")):
            out.update({m.group(1), f"{stack[-1]}>{m.group(1)}"})
            i = m.end()
            continue
        for word in ("error(", "enum(", "fusion("):
            if type_text.startswith(word, i):
                kind = word[:-1]
                out.update({kind, f"{stack[-1]}>{kind}"})
                stack.append(kind)
                i += len(word)
                break
        else:
            kind = None
            if type_text.startswith("|[", i):
                kind, step = "set", 2
            elif type_text.startswith("|{", i):
                kind, step = "map", 2
            elif c == "[":
                kind, step = "array", 1
            elif c == "{":
                kind, step = "record", 1
            elif c == "(":
                kind, step = ("group" if sup else "union"), 1
            if kind is not None:
                out.update({kind, f"{stack[-1]}>{kind}"})
                stack.append(kind)
                i += step
                continue
            if type_text.startswith(("]|", "}|"), i):
                stack.pop() if len(stack) > 1 else None
                i += 2
                continue
            if c in "]})":
                stack.pop() if len(stack) > 1 else None
            elif c == "|" and sup:
                out.update({"union", f"{stack[-1]}>union"})
            elif c == "=":
                out.update({"named", f"{stack[-1]}>named"})
            elif type_text.startswith("?:", i):
                out.update({"optional", f"{stack[-1]}>optional"})
            i += 1
    return out


def _canonical(o: oracles.Oracle, fmt: str, text: str) -> list[str] | None:
    binary = realtools.find(o.tool, o.command)
    assert binary is not None
    flag = ["-i", "json"] if fmt == "json" else []
    textflag = "-z" if o.command == "zq" else "-s"
    done = subprocess.run([str(binary), textflag, *flag, "-"], input=text.encode(),
                          capture_output=True, timeout=60)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    lines = done.stdout.decode().splitlines()
    return lines[:MAX_VALUES]


def _types(o: oracles.Oracle, lines: list[str]) -> list[str] | None:
    binary = realtools.find(o.tool, o.command)
    assert binary is not None
    if o.command == "zq":
        argv = [str(binary), "-z", "yield typeof(this)", "-"]
    else:
        argv = [str(binary), "-s", "-c", "values typeof(this)", "-"]
    done = subprocess.run(argv, input=("\n".join(lines) + "\n").encode(),
                          capture_output=True, timeout=60)
    if done.returncode != 0:
        return None
    got = done.stdout.decode().splitlines()
    return got if len(got) == len(lines) else None


Candidate = tuple[str, list[str], set[str]]  # name, canonical text lines, features


def _candidates(o: oracles.Oracle) -> list[Candidate]:
    """Every ztest input the tool parses, canonical, cut short, with its features."""
    sup = o.command == "super"
    candidates: list[Candidate] = []
    seen_text: set[str] = set()
    for name, fmt, text in ztest_inputs(o.tool):
        lines = _canonical(o, fmt, text)
        if not lines or sum(map(len, lines)) > MAX_BYTES:
            continue
        key = "\n".join(lines)
        if key in seen_text:
            continue
        seen_text.add(key)
        types = _types(o, lines)
        if types is None:
            continue
        feats: set[str] = set()
        for t in types:
            feats |= features(t[1:-1] if t.startswith("<") else t, sup)
        candidates.append((name, lines, feats))
    return candidates


def choose(candidates: list[Candidate]) -> list[Candidate]:
    """The format's own tests, then greedily the input adding most coverage, until
    every construct seen in any input is in ``REPEAT`` chosen ones (the ztests of one
    feature vary in what else they hold)."""
    left = list(candidates)
    count: dict[str, int] = {}

    def gain(c: Candidate) -> int:
        return sum(max(0, REPEAT - count.get(f, 0)) for f in c[2])

    def take(c: Candidate) -> None:
        chosen.append(c)
        left.remove(c)
        for f in c[2]:
            count[f] = count.get(f, 0) + 1

    chosen: list[Candidate] = []
    for c in [c for c in left if c[0].startswith(ALWAYS)]:
        take(c)
    while left:
        best = max(left, key=lambda c: (gain(c), -len(c[1])))
        if not gain(best):
            break
        take(best)
    return chosen


def select(family: str) -> None:
    """Choose the inputs of ``family`` and write them into ``inputs/<family>/``."""
    o = SOURCES[family]
    if realtools.find(o.tool, o.command) is None:
        raise SystemExit(f"{o.command} {o.tool.version} is not built")
    cache = Path(tempfile.gettempdir()) / f"conformance-candidates-{family}.json"
    if cache.is_file():
        candidates = [(n, ls, set(fs)) for n, ls, fs in json.loads(cache.read_text())]
    else:
        candidates = _candidates(o)
        cache.write_text(json.dumps([(n, ls, sorted(fs)) for n, ls, fs in candidates]))
    chosen = choose(candidates)
    out = DATA / "inputs" / family
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*"):
        old.unlink()
    for name, lines, _ in sorted(chosen):
        (out / f"{name}.{INPUT_EXT[family]}").write_text("\n".join(lines) + "\n")
    covered = set().union(*(c[2] for c in chosen)) if chosen else set()
    print(f"{family}: {len(chosen)} of {len(candidates)} inputs, "
          f"{sum(len(c[1]) for c in chosen)} values, {len(covered)} features", file=sys.stderr)


def input_files(family: str) -> list[Path]:
    """The inputs of ``family``: canonical text, and JSON (``.json``) where the JSON
    reader gives what the text cannot say (see the corpus README)."""
    folder = DATA / "inputs" / family
    return sorted([*folder.glob(f"*.{INPUT_EXT[family]}"), *folder.glob("*.json")])


def input_file(family: str, stem: str) -> Path:
    """The input file ``stem`` of ``family`` (text or JSON)."""
    json_input = DATA / "inputs" / family / f"{stem}.json"
    return json_input if json_input.is_file() else json_input.with_suffix(
        "." + INPUT_EXT[family])


def input_flags(src: Path) -> list[str]:
    """The writer's flags that read ``src``: ``-i json`` for a JSON input."""
    return ["-i", "json"] if src.suffix == ".json" else []


def add(family: str, names: list[str]) -> None:
    """Add the whole ztest inputs ``names`` (as :func:`ztest_inputs` names them) to
    ``inputs/<family>/`` and write them with every writer of ``family``, keeping the
    files there: what a live run over every input (:mod:`.conformance_full`) found.  A
    JSON input stays JSON (its reader fuses values and writes nil bodies, which text
    would not say); a text input is the tool's ``-s -fusion`` of it (fusion values kept)."""
    o = SOURCES[family]
    binary = realtools.find(o.tool, o.command)
    if binary is None:
        raise SystemExit(f"{o.command} {o.tool.version} is not built")
    found = {name: (fmt, text) for name, fmt, text in ztest_inputs(o.tool)}
    folder = DATA / "inputs" / family
    for name in names:
        fmt, text = found[name]
        if fmt == "json" or _json_reader_reads(binary, text):
            (folder / f"{name}.json").write_text(text)
            continue
        flag = ["-fusion"] if o.command == "super" else []
        canon = realtools.run(binary, "-s" if o.command == "super" else "-z", *flag, "-",
                              input=text.encode())
        (folder / f"{name}.{INPUT_EXT[family]}").write_text(canon.decode())
    for writer_name, w in WRITERS.items():
        if w.family == family:
            write(writer_name, only=names)


def _json_reader_reads(binary: Path, text: str) -> bool:
    """Whether the tool's format detection reads ``text`` as JSON (as it wrote it)."""
    try:
        plain = realtools.run(binary, "-f", "bsup", "-", input=text.encode())
        as_json = realtools.run(binary, "-i", "json", "-f", "bsup", "-", input=text.encode())
    except RuntimeError:
        return False
    return plain == as_json


def write(writer_name: str, only: list[str] | None = None) -> None:
    """Run one writer over its family's inputs; save its files and its tool's output
    (``only``: those inputs, the others' files kept)."""
    w = WRITERS[writer_name]
    o = w.oracle
    binary = realtools.find(o.tool, o.command)
    if binary is None:
        raise SystemExit(f"{o.command} {o.tool.version} is not built")
    inputs = [p for p in input_files(w.family) if only is None or p.stem in only]
    out = DATA / o.name
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, str] = {}
    if only is None:
        for old in out.glob("*"):
            old.unlink()
    else:
        manifest = json.loads((out / "MANIFEST.json").read_text())
    for src in inputs:
        name = src.stem
        with tempfile.TemporaryDirectory() as tmp:
            try:
                for ext in w.formats:
                    realtools.run(binary, *input_flags(src), "-f", ext,
                                  "-o", str(Path(tmp) / f"{name}.{ext}"), str(src))
            except RuntimeError as e:
                said = str(e).split(": ", 1)[-1] if "exited" in str(e) else str(e)
                manifest[name] = "not written: " + said.splitlines()[-1].replace(
                    str(src), src.name).replace(tmp + "/", "").strip()
                continue
            for ext in w.formats:
                dst = out / f"{name}.{ext}"
                dst.write_bytes((Path(tmp) / f"{name}.{ext}").read_bytes())
        for ext in w.formats:
            dst = out / f"{name}.{ext}"
            p = oracles.run(o, dst)
            assert p is not None
            oracles.save(p, o, dst)
        manifest[name] = "written"
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    done = sum(v == "written" for v in manifest.values())
    print(f"{writer_name}: {done} of {len(manifest)} inputs written", file=sys.stderr)


#: The writers whose tool reads the BSUP (version 0) csup-async writes: zq.
OURS_READERS = ("zq-1.12", "zq-1.7")


def ours_bsup(path: Path) -> bytes:
    """csup-async's BSUP of what it reads from ``path`` (the other direction: the
    tool that wrote ``path`` must read this back as it reads ``path``)."""
    from csup_async.format.bsup import encode_stream
    from tests.support.conformance import read_here

    return encode_stream(read_here(path))


def ours_path(path: Path) -> Path:
    return path.with_name(path.name + ".ours.bsup")


def write_ours(writer_name: str) -> None:
    """csup-async's BSUP of each file of a zq writer, and what that zq prints for it."""
    from tests.support.conformance import files

    w = WRITERS[writer_name]
    for path in files(w):
        ours = ours_path(path)
        ours.write_bytes(ours_bsup(path))
        p = oracles.run(w.oracle, ours)
        assert p is not None
        oracles.save(p, w.oracle, ours)


ISSUE37 = ROOT / "tests" / "data" / "real" / "issue37"

#: The released-writer failures of issue #37: file -> (the writer, its input).
ISSUE37_FILES = {
    "absent.csup": (oracles.SUPER_0_3, "{x?:1,y?:_::string,z:1}\n"),
    "fusion.csup": (oracles.SUPER_0_3, "fusion({x?:_::int64,y?:7},<{y:int64}>)\n"),
    "error_null.csup": (oracles.SUPER_0_2, "error(null)\n{e:error(null),n:1}\n"),
    "error_null.bsup": (oracles.SUPER_0_2, "error(null)\n{e:error(null),n:1}\n"),
    "typedefs.csup": (oracles.SUPER_0_3,
                      "{r:{x:2},b:3}\n{r:fusion({x?:1},<{x:int64}>),b:3}\n"),
}


def write_issue37() -> None:
    """The files of issue #37's failures, their tools' outputs, and csup-async's BSUP of
    ``typedefs.csup`` (``ours.bsup``) with what zq prints for it."""
    ISSUE37.mkdir(parents=True, exist_ok=True)
    for name, (o, text) in ISSUE37_FILES.items():
        binary = realtools.find(o.tool, o.command)
        if binary is None:
            raise SystemExit(f"{o.command} {o.tool.version} is not built")
        src = ISSUE37 / (name.split(".")[0] + ".input.sup")
        src.write_text(text)
        dst = ISSUE37 / name
        realtools.run(binary, "-f", dst.suffix[1:], "-o", str(dst), str(src))
        p = oracles.run(o, dst)
        assert p is not None
        oracles.save(p, o, dst)
    ours = ISSUE37 / "ours.bsup"
    subprocess.run([sys.executable, "-m", "csup_async.cli", "convert",
                    str(ISSUE37 / "typedefs.csup"), str(ours)], check=True, cwd=ROOT,
                   capture_output=True)
    for o in (oracles.ZQ_1_12, oracles.ZQ_1_7):
        p = oracles.run(o, ours)
        if p is not None:
            oracles.save(p, o, ours)


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "table"
    if what == "select":
        for family in (argv[1:] or list(SOURCES)):
            select(family)
    elif what == "write":
        for name in (argv[1:] or list(WRITERS)):
            write(name)
    elif what == "add":  # add FAMILY NAME...: whole inputs a live run found wanting
        add(argv[1], argv[2:])
    elif what == "ours":
        for name in (argv[1:] or list(OURS_READERS)):
            write_ours(name)
    elif what == "issue37":
        write_issue37()
    elif what == "table":
        from tests.support.conformance import print_table

        print_table()
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
