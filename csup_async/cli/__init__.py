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

import contextlib
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
from .messages import cli_message, output_error

__all__ = ["COMMANDS", "EXIT_BUDGET", "EXIT_DATA", "EXIT_NOT_FOUND", "EXIT_OTHER", "EXIT_STORE",
           "EXIT_USAGE", "UsageError", "build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # argparse would name them under the top-level usage, not the command's
        (getattr(args, "command_parser", None) or parser).error(
            f"unrecognized arguments: {' '.join(extra)}")
    check_args(parser, args)
    if sys.stdout is None:  # started with stdout closed (`>&-`): as cat, say so at once
        print("csup-async: error: cannot write the output: standard output is closed",
              file=sys.stderr)
        return EXIT_OTHER
    try:
        code = COMMANDS[args.command](args) or 0
        sys.stdout.flush()  # here, not at exit: a failed write is reported like any other
        return code
    except CsupError as e:
        if args.debug:
            traceback.print_exc()
        print(f"csup-async: error: {cli_message(str(e))}", file=sys.stderr)
        return exit_code(e)
    except BrokenPipeError:  # `| head -1`: the reader has all it wants; exit quietly
        _discard_stdout()
        return 0
    except OSError as e:
        if args.debug:
            traceback.print_exc()
        _discard_stdout()
        print(f"csup-async: error: {output_error(e)}", file=sys.stderr)
        return EXIT_OTHER
    except KeyboardInterrupt:
        return 130


def _discard_stdout() -> None:
    """Send what stdout still buffers to /dev/null, so the interpreter's flush at exit
    neither fails again nor prints "Exception ignored" (and exit code 120)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no descriptor
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
