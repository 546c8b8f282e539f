"""Progress bars on stderr, only when stderr is a terminal (``--progress`` /
``--no-progress`` override), so piped output stays exactly the data."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any


def progress_on(args: argparse.Namespace) -> bool:
    flag = getattr(args, "progress", None)
    return sys.stderr.isatty() if flag is None else bool(flag)


@contextlib.contextmanager
def progress_bar(args: argparse.Namespace, unit: str = "bytes") -> Iterator[Any]:
    """A transient rich progress display on stderr, or None when progress is off.

    stderr, not stdout: the data a command prints must stay exactly the data
    when it is piped or redirected, with or without a bar.
    """
    if not progress_on(args):
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    console = Console(stderr=True, force_terminal=True if args.progress else None)
    amount: tuple[Any, ...] = ((DownloadColumn(), TransferSpeedColumn()) if unit == "bytes"
                               else (MofNCompleteColumn(),) if unit == "files"
                               else (TextColumn("{task.completed:,} " + unit),))
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), *amount,
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        yield bar


def with_progress(values: Any, label: str, args: argparse.Namespace) -> Any:
    """Count values on a live line when progress is on; pass them through untouched if not."""
    from ..writers.arrow_input import ArrowValues

    if not progress_on(args):
        return values
    if isinstance(values, ArrowValues):  # count whole batches: the writer's fast path stays
        return ArrowValues(_counted_batches(values.source, label, args))
    return _counted_values(values, label, args)


def _counted_values(values: Any, label: str, args: argparse.Namespace) -> Iterator[Any]:
    with progress_bar(args, unit="values") as bar:
        task = bar.add_task(label, total=None)
        for i, v in enumerate(values, 1):
            yield v
            if i % 1000 == 0:
                bar.update(task, completed=i)


def _counted_batches(batches: Any, label: str, args: argparse.Namespace) -> Iterator[Any]:
    """Record batches as they are, with their rows counted: still Arrow, still vectorised."""
    with progress_bar(args, unit="rows") as bar:
        task = bar.add_task(label, total=None)
        for batch in batches:
            yield batch
            bar.advance(task, batch.num_rows)


def budget_options(args: argparse.Namespace) -> dict[str, Any]:
    """``max_requests``/``max_bytes`` of ``--max-requests``/``--max-bytes`` (those given)."""
    out = {}
    for name in ("max_requests", "max_bytes"):
        v = getattr(args, name, None)
        if v is not None:
            out[name] = v
    return out


@contextlib.contextmanager
def planned_progress(args: argparse.Namespace, label: str
                     ) -> Iterator[Callable[[Any], None] | None]:
    """An ``on_progress`` callback driving a bar of bytes read against bytes planned (the
    plan's exact figures, objects done of planned beside them), or None when progress
    is off."""
    with progress_bar(args) as bar:
        if bar is None:
            yield None
            return
        task = bar.add_task(label, total=None)

        def on_progress(p: Any) -> None:
            files = (f" ({p.files_done:,}/{p.files_planned:,} objects)"
                     if p.files_planned > 1 else "")
            bar.update(task, completed=p.bytes_done, total=p.bytes_planned or None,
                       description=label + files)

        yield on_progress
