"""The ``csup-async`` command: convert, cat, inspect, scan and plan CSUP files and datasets.

A URL names one object, or many: a prefix or directory (``s3://b/events/``,
``./events``), a glob (``'s3://b/events/*.csup'``) or several URLs.  Many
objects are read as one dataset (:func:`csup_async.open_dataset`): metadata
concurrently, files that cannot contribute pruned, rows in file order.

Errors print as one line on stderr with a distinct exit code per kind
(``--debug`` shows the traceback): 2 usage, 3 not found (object or column),
4 invalid or unsupported data, 5 store failure, 1 anything else.

Progress bars go to stderr, only when stderr is a terminal (``--progress`` /
``--no-progress`` override), so piped output stays exactly the data.
"""

from __future__ import annotations

import os
import sys
import traceback

from ..model.errors import CsupError
from .args import build_parser, check_args
from .commands import COMMANDS
from .exits import (
    EXIT_BUDGET,
    EXIT_DATA,
    EXIT_NOT_FOUND,
    EXIT_OTHER,
    EXIT_STORE,
    EXIT_USAGE,
    UsageError,
    exit_code,
)
from .messages import cli_message

__all__ = ["COMMANDS", "EXIT_BUDGET", "EXIT_DATA", "EXIT_NOT_FOUND", "EXIT_OTHER", "EXIT_STORE",
           "EXIT_USAGE", "UsageError", "build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # argparse would name them under the top-level usage, not the command's
        (getattr(args, "command_parser", None) or parser).error(
            f"unrecognized arguments: {' '.join(extra)}")
    check_args(parser, args)
    try:
        return COMMANDS[args.command](args) or 0
    except CsupError as e:
        if args.debug:
            traceback.print_exc()
        print(f"csup-async: error: {cli_message(str(e))}", file=sys.stderr)
        return exit_code(e)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
