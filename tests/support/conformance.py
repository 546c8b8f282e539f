"""How csup-async reads the conformance corpus (``tests/data/real/conformance/``), judged
by the real tool that wrote each file (:mod:`tests.support.oracle`).

Each file gets one verdict: ``exact`` (every value and type as the tool prints them),
``refused`` (a :class:`csup_async.CsupError` naming why), ``wrong`` (values or types
differ, or an exception that is not a ``CsupError``), or ``unjudged`` (no tool output
to judge by: the tool refused its own file).  :func:`print_table` prints the
conformance table per writer and format.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import oracle as oracles
from tests.support.conformance_data import DATA, WRITERS, Writer


@dataclass(frozen=True)
class Verdict:
    outcome: str  # exact, refused, wrong, unjudged
    detail: str = ""


def files(writer: Writer) -> list[Path]:
    """The committed files of one writer (both formats), in name order."""
    folder = DATA / writer.oracle.name
    return sorted(p for ext in writer.formats for p in folder.glob(f"*.{ext}")
                  if p.name.count(".") == 1)  # not the tool's outputs, <file>.<tool>.<ext>


def read_here(path: Path) -> list[tuple[Any, Any]]:
    """What csup-async reads from ``path``: ``(type, typed value)`` per value, by the
    paths a user takes (``open`` for columnar files, the input reader of ``convert``
    for row files)."""
    if path.suffix in (".csup", ".vng"):
        import csup_async

        async def read() -> list[Any]:
            async with csup_async.open(str(path)) as r:
                return await r.read_values()

        return [(v.type, v.value) for v in asyncio.run(read())]
    from csup_async.writers.inputs import read_values

    return [(v.type, v.value) for v in read_values(str(path))]


def verdict(writer: Writer, path: Path, *, live: bool = True,
            printed: oracles.Printed | None = None) -> Verdict:
    """How csup-async reads one file of ``writer``, judged by its tool (or by
    ``printed``, its output already at hand)."""
    from csup_async import CsupError

    o = writer.oracle
    p = printed if printed is not None else oracles.printed(o, path, live=live)
    if p is None or p.error is not None:
        return Verdict("unjudged", p.error if p is not None else "no tool output")
    try:
        values = read_here(path)
    except CsupError as e:
        return Verdict("refused", str(e).replace(str(path), path.name))
    except Exception as e:  # a crash is a wrong reading, named as such
        return Verdict("wrong", f"{type(e).__name__}: {e}")
    try:
        diff = oracles.judge(values, p, o)
    except Exception as e:  # values the judge cannot render
        diff = f"{type(e).__name__} while judging: {e}"
    return Verdict("wrong", diff) if diff else Verdict("exact")


def table(live: bool = False) -> dict[tuple[str, str], Counter[str]]:
    """Counts of verdicts per (writer, format)."""
    out: dict[tuple[str, str], Counter[str]] = {}
    for name, w in WRITERS.items():
        for path in files(w):
            v = verdict(w, path, live=live)
            out.setdefault((name, path.suffix[1:]), Counter())[v.outcome] += 1
    return out


def print_table(live: bool = False) -> None:
    rows = table(live)
    print("| writer | format | files | exact | refused | wrong | unjudged |")
    print("|---|---|---|---|---|---|---|")
    for (name, fmt), c in rows.items():
        ver = WRITERS[name].versions[fmt]
        print(f"| {name} | {fmt} v{ver} | {sum(c.values())} | {c['exact']} | {c['refused']} "
              f"| {c['wrong']} | {c['unjudged']} |")


def details(live: bool = False) -> list[dict[str, str]]:
    """Every file's verdict that is not ``exact`` (for reports)."""
    out = []
    for name, w in WRITERS.items():
        for path in files(w):
            v = verdict(w, path, live=live)
            if v.outcome != "exact":
                out.append({"writer": name, "file": path.name, "outcome": v.outcome,
                            "detail": v.detail})
    return out


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["details"]:
        print(json.dumps(details(), indent=1))
    else:
        print_table()
