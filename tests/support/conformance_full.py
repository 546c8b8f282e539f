"""Conformance over every ztest input, live: no selection, no cut.

The committed corpus (:mod:`tests.support.conformance_data`) keeps ~90 inputs per
family, chosen greedily and cut to 12 values.  This runs the same judgement over
*every* SUP/ZSON/JSON input of the snapshots' ztests (identical texts once), whole,
through each real writer (super main, v0.3.0, v0.2.0; zq v1.12.0, v1.7.0), in a
temporary folder, and prints the table per writer and format::

    nice -n 10 python3 -m tests.support.conformance_full --out /tmp/fullconf [--jobs 2]

Each writer writes its columnar and its row format of each input it parses (an input
it does not parse is counted, not judged); csup-async reads each file as a user would
(:func:`tests.support.conformance.read_here`) and the tool's own uncompressed
BSUP/ZNG and JSON of the file judge it (:func:`tests.support.conformance.verdict`).
Every verdict is kept in ``OUT/verdicts.jsonl`` (resumable: a file already judged is
not judged again) and the files stay in ``OUT/<writer>/`` to look into.  Needs the
binaries and the snapshots; never run in CI.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tests.support import oracle as oracles
from tests.support import realtools
from tests.support.conformance_data import SOURCES, WRITERS, ztest_inputs

Job = tuple[str, str, str, str, str]  # writer, input name, input format, text, out dir


def inputs(family: str) -> list[tuple[str, str, str]]:
    """Every input of ``family``'s ztests, each distinct (format, text) once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for name, fmt, text in ztest_inputs(SOURCES[family].tool):
        if (fmt, text) not in seen:
            seen.add((fmt, text))
            out.append((name, fmt, text))
    return out


def printed(o: oracles.Oracle, path: Path) -> oracles.Printed:
    """The tool's binary (uncompressed) and JSON output of ``path``: what judges."""
    binary = realtools.find(o.tool, o.command)
    assert binary is not None
    try:
        raw = realtools.run(binary, *o.argv("binary", path))
    except (RuntimeError, OSError) as e:
        return oracles.Printed(o.name, None, "", b"", True, oracles._first_line(str(e), binary))
    try:
        js, why = oracles._lines(realtools.run(binary, *o.argv("json", path)).decode()), None
    except (RuntimeError, OSError) as e:
        js, why = None, oracles._first_line(str(e), binary)
    return oracles.Printed(o.name, js, "", raw, True, json_error=why)


def judge_input(job: Job) -> list[dict[str, str]]:
    """Write one input with one writer, and judge csup-async's reading of each file."""
    from tests.support.conformance import verdict

    writer, name, fmt, text, out = job
    w = WRITERS[writer]
    binary = realtools.find(w.oracle.tool, w.oracle.command)
    assert binary is not None
    folder = Path(out) / writer
    src = folder / f"{name}.input.{'json' if fmt == 'json' else 'txt'}"
    src.write_text(text)
    flags = ["-i", "json"] if fmt == "json" else []
    rows = []
    for ext in w.formats:
        dst = folder / f"{name}.{ext}"
        row = {"writer": writer, "format": ext, "file": dst.name}
        try:
            realtools.run(binary, *flags, "-f", ext, "-o", str(dst), str(src), timeout=60)
        except (RuntimeError, OSError) as e:
            said = str(e).split(": ", 1)[-1].strip().splitlines()
            rows.append({**row, "outcome": "not written", "detail": said[-1] if said else ""})
            continue
        except Exception as e:  # a timeout
            rows.append({**row, "outcome": "not written", "detail": type(e).__name__})
            continue
        v = verdict(w, dst, printed=printed(w.oracle, dst))
        rows.append({**row, "outcome": v.outcome, "detail": v.detail[:600]})
    return rows


def rejudge(out: Path, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """``rows`` with each written file not read exactly judged again."""
    from tests.support.conformance import verdict

    again = []
    for r in rows:
        if r["outcome"] in ("exact", "not written"):
            again.append(r)
            continue
        w = WRITERS[r["writer"]]
        path = out / r["writer"] / r["file"]
        v = verdict(w, path, printed=printed(w.oracle, path))
        again.append({**r, "outcome": v.outcome, "detail": v.detail[:600]})
        if v.outcome != "exact":
            print(f"{r['writer']}/{r['file']}: {v.outcome}: {v.detail[:200]}", file=sys.stderr)
    return again


def jobs(out: Path, only: list[str]) -> list[Job]:
    todo: list[Job] = []
    for family in SOURCES:
        writers = [n for n, w in WRITERS.items() if w.family == family and
                   (not only or n in only)]
        if not writers:
            continue
        got = inputs(family)
        for writer in writers:
            (out / writer).mkdir(parents=True, exist_ok=True)
            todo += [(writer, name, fmt, text, str(out)) for name, fmt, text in got]
    return todo


def table(rows: list[dict[str, str]]) -> str:
    """The table per writer and format: inputs not written, files, verdicts."""
    counts: dict[tuple[str, str], Counter[str]] = {}
    for r in rows:
        counts.setdefault((r["writer"], r["format"]), Counter())[r["outcome"]] += 1
    lines = ["| writer | format | not written | files | exact | refused | wrong | unjudged |",
             "|---|---|---|---|---|---|---|---|"]
    total: Counter[str] = Counter()
    for name, w in WRITERS.items():
        for ext in w.formats:
            c = counts.get((name, ext), Counter())
            files = sum(c.values()) - c["not written"]
            total.update(c)
            lines.append(f"| {name} | {ext} v{w.versions[ext]} | {c['not written']} | {files} "
                         f"| {c['exact']} | {c['refused']} | {c['wrong']} | {c['unjudged']} |")
    files = sum(total.values()) - total["not written"]
    lines.append(f"| all | | {total['not written']} | {files} | {total['exact']} "
                 f"| {total['refused']} | {total['wrong']} | {total['unjudged']} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--writer", action="append", default=[], choices=sorted(WRITERS))
    ap.add_argument("--table", action="store_true", help="only print the kept verdicts")
    ap.add_argument("--rejudge", action="store_true",
                    help="judge again every kept file not read exactly (after a fix)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    kept = args.out / "verdicts.jsonl"
    rows = [json.loads(x) for x in kept.read_text().splitlines()] if kept.is_file() else []
    if args.rejudge:
        rows = rejudge(args.out, rows)
        kept.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if not args.table:
        done = {(r["writer"], r["file"].rsplit(".", 1)[0]) for r in rows}
        todo = [j for j in jobs(args.out, args.writer) if (j[0], j[1]) not in done]
        print(f"{len(todo)} inputs to write and judge", file=sys.stderr)
        with kept.open("a") as sink, ProcessPoolExecutor(args.jobs) as pool:
            for i, got in enumerate(pool.map(judge_input, todo, chunksize=4)):
                for r in got:
                    sink.write(json.dumps(r) + "\n")
                    if r["outcome"] not in ("exact", "not written"):
                        print(f"{r['writer']}/{r['file']}: {r['outcome']}: {r['detail'][:200]}",
                              file=sys.stderr)
                sink.flush()
                rows += got
                if i % 200 == 0:
                    print(f"{i}/{len(todo)}", file=sys.stderr, flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
