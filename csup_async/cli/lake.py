"""``csup-async lake``: list pools and branches, scan and explain a pool, load rows.

    csup-async lake create URL                  an empty lake (as ``zed init``)
    csup-async lake create-pool URL logs --order ts:asc   a pool (as ``zed create``)
    csup-async lake ls URL                      pools: name, ID, key, order
    csup-async lake ls URL --pool logs@main     the pool's branches and live objects
    csup-async lake scan URL --pool logs -c ts,msg --where "ts >= 100 and msg = 'x'"
    csup-async lake explain URL --pool logs --where 'ts == 5'
    csup-async lake load URL --pool logs@main rows.ndjson -m "message"

``--where`` takes the filter grammar of every other command (ANDed when
repeated): comparisons of the pool key narrow the objects and byte ranges read,
and the whole filter is evaluated on the rows.  Rows print as JSON lines, in
pool-key order.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from .exits import UsageError

__all__ = ["add_parser", "run"]


def add_parser(sub: Any, common: argparse.ArgumentParser, store: argparse.ArgumentParser
               ) -> None:
    lake = sub.add_parser("lake", help="Zed lakes: list pools, scan, explain, load",
                          parents=[common])
    cmds = lake.add_subparsers(dest="lake_command", required=True,
                               help="create, create-pool, ls, scan, explain or load")
    c = cmds.add_parser("create", help="write an empty lake (what `zed init` writes)",
                        parents=[common, store])
    c.add_argument("url", metavar="URL", help="the new lake's root (directory, s3://, gs://)")
    c.set_defaults(command_parser=c)
    c = cmds.add_parser("create-pool", help="add a pool and its main branch (as `zed create`)",
                        parents=[common, store])
    c.add_argument("url", metavar="URL", help="the lake's root (directory, s3://, gs://)")
    c.add_argument("name", metavar="NAME", help="the pool's name")
    c.add_argument("--order", default="ts:desc", metavar="KEY[:asc|:desc]",
                   help="the pool key (a dotted path) and its order, as zed's -orderby "
                        "(default ts:desc)")
    c.add_argument("--seek-stride", type=int, default=None, metavar="BYTES",
                   help="bytes of a data object per seek-index entry (default 65536)")
    c.set_defaults(command_parser=c)
    for name, helptext in (("ls", "list pools, or a pool's branches and objects"),
                           ("scan", "print a pool's rows in key order (JSON lines)"),
                           ("explain", "objects kept and pruned, byte ranges to read"),
                           ("load", "commit rows (NDJSON or BSUP/ZNG) to a branch")):
        c = cmds.add_parser(name, help=helptext, parents=[common, store])
        c.add_argument("url", metavar="URL", help="the lake's root (directory, s3://, gs://)")
        c.add_argument("--pool", required=name != "ls",
                       help="pool[@branch or @commit] (a pool ID works too)")
        c.set_defaults(command_parser=c)  # usage errors show this sub-command's usage
        if name != "load":  # a load commits on the branch's tip: no time travel
            c.add_argument("--at", default=None,
                           help="time travel: a branch journal ID or a commit ID")
        c.add_argument("--max-journal-entries", type=int, default=None, metavar="N",
                       help="the most entries one journal replay reads (default 1000000); "
                            "a journal asking for more is an error")
        if name in ("scan", "explain"):
            c.add_argument("--where", action="append", default=[],
                           help="a filter in the --where grammar of scan, e.g. \"ts >= "
                                "'2024-01-01T00:00:00Z' and kind = 'push'\" (repeat to "
                                "AND); pool-key comparisons prune objects")
        if name == "scan":
            c.add_argument("-c", "--columns", default=None, help="comma-separated fields")
            c.add_argument("--limit", type=int, default=None, help="print the first N rows")
            c.add_argument("--stats", action="store_true", help="requests and bytes (stderr)")
            c.add_argument("--explain", action="store_true", help="the plan first (stderr)")
        if name == "explain":
            c.add_argument("--json", action="store_true", help="the plan as JSON")
        if name == "load":
            c.add_argument("input", help="an NDJSON file or a BSUP/ZNG file")
            c.add_argument("-m", "--message", default="", help="the commit's message")
            c.add_argument("--author", default="", help="the commit's author")
            c.add_argument("--csup", action="store_true", help="also write a .csup copy")
            c.add_argument("--target", default=None, metavar="TOOL",
                           help="the layout of the columnar copy (--csup): csup-async, "
                                "super, super-0.3 or zed-1.12 (default: the database's: "
                                "csup-async in a Zed lake, super-0.3 in a SuperDB database "
                                "of super v0.3.0, super in one of super main)")


def _at(s: str | None) -> int | str | None:
    if s is None:
        return None
    return int(s) if s.isdigit() else s


def explain_text(d: dict[str, Any]) -> str:
    kept = d["kept"]
    lines = [f"pool {d['pool']}@{d['branch'] or d['commit']} (commit {d['commit']}), "
             f"key {d['key']} {d['order']}, filter: {d['key_range']}",
             f"objects: {d['objects']} live, {len(d['pruned_by_min_max'])} pruned by min/max, "
             f"{len(d['pruned_by_seek_index'])} pruned by seek index, {len(kept)} read in "
             f"{d['groups']} merge group(s)"]
    for k in kept:
        ranges = ", ".join(f"{a}+{n}" for a, n in k["ranges"])
        chunks = (f" ({k['chunks'][0]} of {k['chunks'][1]} seek chunks)"
                  if k["chunks"] else " (whole object)")
        lines.append(f"  read {k['id']} [{k['span'][0]}, {k['span'][1]}] {k['count']:,} rows: "
                     f"{k['bytes']:,} of {k['size']:,} bytes at {ranges}{chunks}")
    for name in d["pruned_by_min_max"]:
        lines.append(f"  skip {name} (min/max)")
    for name in d["pruned_by_seek_index"]:
        lines.append(f"  skip {name} (seek index)")
    lines.append(f"bytes to read: {d['bytes_to_read']:,}")
    return "\n".join(lines)


def _read_input(path: str) -> list[Any]:
    with open(path, "rb") as f:
        head = f.read(1)
        f.seek(0)
        data = f.read()
    if head in (b"{", b"[", b" ", b"\n"):
        text = data.decode("utf-8")
        if text.lstrip().startswith("["):
            return json.loads(text)
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    from ..format.bsup import read_values

    return read_values(data, typed=False)


def parse_order(text: str) -> tuple[str, str]:
    """``--order``'s ``key[:asc|:desc]`` as (key, order); a bad one is a UsageError."""
    key, sep, order = text.rpartition(":")
    if not sep:
        key, order = text, "desc"
    order = order.lower()
    if not key or order not in ("asc", "desc"):
        raise UsageError(f"--order takes KEY, KEY:asc or KEY:desc, not {text!r}")
    return key, order


async def _create(args: argparse.Namespace, store_opts: dict[str, Any]) -> int:
    from ..lake.create import create_lake
    from ..lake.lake import open_lake
    from ..model.redact import redact_url

    if args.lake_command == "create":
        await create_lake(args.url, **store_opts)
        print(f"lake created: {redact_url(args.url)}")
        return 0
    key, order = parse_order(args.order)
    stride = {} if args.seek_stride is None else {"seek_stride": args.seek_stride}
    if args.seek_stride is not None and args.seek_stride < 1:
        raise UsageError(f"--seek-stride must be at least 1, not {args.seek_stride}")
    async with open_lake(args.url, **store_opts) as lake:
        cfg = await lake.create_pool(args.name, key=key, order=order, **stride)
    print(f"pool created: {cfg.name} {cfg.id_str}")
    return 0


def run(args: argparse.Namespace, store_opts: dict[str, Any]) -> int:
    """Run a ``lake`` command; ``store_opts`` are the store flags that apply to its URL."""
    from ..arrays.jsonout import dumps
    from ..lake.filter import where_filter
    from ..lake.keys import display
    from ..lake.lake import open_lake

    if args.lake_command in ("create", "create-pool"):
        return asyncio.run(_create(args, store_opts))

    async def go() -> int:
        async with open_lake(args.url, max_journal_entries=args.max_journal_entries,
                             **store_opts) as lake:
            cmd = args.lake_command
            if cmd == "ls" and not args.pool:
                for p in lake.pools:
                    print(f"{p.name} {p.id_str} key {p.key_name} order {p.order}")
                return 0
            pool = await lake.pool(args.pool, at=_at(getattr(args, "at", None)))
            if cmd == "ls":
                for b in await lake.branches(pool.name):
                    print(f"branch {b.name} commit {_k(b.commit)}")
                for o in pool.objects:
                    mn, mx = display(o.min), display(o.max)
                    vec = " +columnar" if pool.has_vector(o) else ""
                    print(f"{o.name} {o.count} rows {o.size} bytes "
                          f"key [{mn}, {mx}]{vec}")
                return 0
            if cmd == "load":
                rows = _read_input(args.input)
                commit = await pool.load(rows, message=args.message, author=args.author,
                                         csup=args.csup, target=args.target)
                print(f"committed {commit}")
                return 0
            filt = where_filter(args.where)
            if cmd == "explain":
                d = await pool.explain(filt)
                print(json.dumps(d, default=str) if args.json else explain_text(d))
                return 0
            if args.explain:
                print(explain_text(await pool.explain(filt)), file=sys.stderr)
            res = await pool.scan(args.columns, filter=filt)
            rows = res.to_pylist()
            if args.limit is not None:
                rows = rows[: args.limit]
            for r in rows:
                sys.stdout.write(dumps(r) + "\n")
            if args.stats:
                sys.stdout.flush()
                print(f"stats: {res.stats}", file=sys.stderr)
            return 0

    return asyncio.run(go())


def _k(c: bytes) -> str:
    from ..lake import ksuid as K

    return K.to_str(c)
