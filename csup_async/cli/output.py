"""How scan prints a batch: a rich table on a terminal, JSON lines or CSV when piped
(vectorised with pyarrow, a Python object per value without it), rendered in one
output thread while the next batch decodes."""

from __future__ import annotations

import asyncio
import csv
import io
import ipaddress
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..model.iptext import ip_text

#: Rows of a table printed at once: one of a few rows appears at once on a terminal.
TABLE_ROWS = 1000
_RENDER: Any = None


async def render_in_thread(fn: Callable[[Any], bytes], batch: Any) -> bytes:
    """``fn(batch)`` in the one output thread: Arrow's kernels release the GIL, so the
    next batch decodes meanwhile; one thread, as Arrow's allocator keeps memory per
    thread and a pool of them would each keep a batch's worth."""
    return await asyncio.get_running_loop().run_in_executor(render_pool(), fn, batch)


def render_pool() -> Any:
    global _RENDER
    if _RENDER is None:
        _RENDER = ThreadPoolExecutor(1, thread_name_prefix="csup-cli-render")
    return _RENDER


def vectorised_output() -> bool:
    from ..arrays.jsonout import have_pyarrow

    return have_pyarrow()



def slow_json(batch: dict[str, Any]) -> bytes:
    """JSON lines without pyarrow: a Python object per value (slow, same text)."""
    from ..arrays.jsonout import dumps

    cols = {c: a.to_pylist() for c, a in batch.items()}
    n = len(next(iter(batch.values()))) if batch else 0
    return "".join(dumps({c: v[i] for c, v in cols.items()}) + "\n"
                   for i in range(n)).encode()


def slow_csv(batch: dict[str, Any]) -> bytes:
    from ..arrays.jsonout import json_value

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = [[_cell(json_value(v)) for v in a.to_pylist()] for a in batch.values()]
    for row in zip(*cols, strict=True):
        w.writerow(row)
    return buf.getvalue().encode()


def print_table(batch: dict[str, Any]) -> None:
    """A rich table of one batch: null shows as a dim ``null``, the empty string as ``""``."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..arrays.jsonout import json_value

    def cell(v: Any) -> Text:
        if v is None:
            return Text("null", style="dim italic")
        if v == "":
            return Text('""', style="dim")
        return Text(_cell(json_value(v)))

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """rich exits 1 on a closed pipe; the CLI exits 0 quietly, as for JSON."""
            self.quiet = True
            raise BrokenPipeError

    table = Table(*batch.keys(), show_lines=False)
    cols = [a.to_pylist() for a in batch.values()]
    for row in zip(*cols, strict=True):
        table.add_row(*(cell(v) for v in row))
    _Console().print(table)


IP_KINDS = (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network,
            ipaddress.IPv6Network)


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    if isinstance(v, IP_KINDS):
        return ip_text(v)
    return str(v)
