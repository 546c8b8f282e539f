"""Errors in the CLI's words: the library names its options as Python spells them
(``pass anonymous=True``); a command-line user needs the flag (``--anonymous``)."""

from __future__ import annotations

import re

__all__ = ["cli_message", "output_error"]

#: Python spelling (a keyword argument, with its value when the hint gives one) -> flag
_FLAGS = {
    "anonymous=True": "--anonymous",
    "request_payer=True": "--request-payer",
    "verify_ssl=False": "--no-verify-ssl",
    "verify_checksums=False": "--no-verify",
    "region=": "--region",
    "endpoint_url=": "--endpoint",
    "endpoint=": "--endpoint",
    "max_connections=": "--max-connections",
    "concurrency=": "--concurrency",
    "file_concurrency=": "--file-concurrency",
    "max_journal_entries=": "--max-journal-entries",
}
_SPELLING = re.compile(r"(?<![\w-])(" + "|".join(
    re.escape(k) + (r"(?!\w)" if k.endswith("=") else r"\b") for k in _FLAGS) + ")")


def cli_message(text: str) -> str:
    """``text`` with each option named by its command-line flag."""
    return _SPELLING.sub(lambda m: _FLAGS[m.group(1)], text)


def output_error(e: OSError) -> str:
    """One line for an OSError that escaped a command: almost always a write to stdout
    that failed (``> /dev/full``, a full disk or quota); the library wraps what it
    reads in CsupError."""
    what = e.strerror or type(e).__name__
    if e.filename is None:
        return f"cannot write the output: {what}"
    return f"{e.filename}: {what}"
