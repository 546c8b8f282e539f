"""Which objects a source names: globs, prefixes and directories expanded and sorted.

One place for the rules every entry point (the API's datasets, the CLI, the Spark
source) shares: what makes a path a glob, where listing starts for a glob, and
Hadoop's hidden-name rule (below the listed prefix, a name starting with ``_`` or
``.`` is not data: ``_SUCCESS`` markers, our writer's staging objects).
"""

from __future__ import annotations

import fnmatch
import glob as _glob
import os
from collections.abc import Sequence

from ..model.errors import CsupError
from ..model.options import DEFAULT_MATCH as _DEFAULT_MATCH
from ..model.redact import redact_url
from .base import Store
from .capabilities import Lister

#: the characters that make a path a glob (``fnmatch``'s)
GLOB_CHARS = frozenset("*?[")

#: what a directory or prefix selects by default: CSUP objects by name (its one
#: definition is csup_async.model.options, with the other options' defaults)
DEFAULT_MATCH = _DEFAULT_MATCH


def has_glob(path: str) -> bool:
    """Whether ``path`` is a pattern.  An HTTP(S) URL with a query string is an object:
    its ``?`` starts the query (a signed URL's), and HTTP cannot list anyway."""
    if path.startswith(("http://", "https://")) and "?" in path:
        return False
    return not GLOB_CHARS.isdisjoint(path)


def glob_base(path: str) -> str | None:
    """Where listing starts for a glob: everything up to the last ``/`` before its first
    glob character (None when ``path`` is no glob)."""
    cut = min((path.index(c) for c in GLOB_CHARS if c in path), default=-1)
    return path[: path.rfind("/", 0, cut) + 1] if cut >= 0 else None


def hidden(relative: str) -> bool:
    """Hadoop's rule: a name below the listed prefix starting with ``_`` or ``.``, at any
    depth, is not data."""
    return any(part.startswith(("_", ".")) for part in relative.split("/") if part)


def hidden_below(source: str, url: str) -> bool:
    """Whether ``url``, listed from ``source`` (a prefix, directory or glob), is hidden
    (:func:`hidden` on its name relative to where listing started); an object named
    explicitly never is."""
    src = source[7:] if source.startswith("file://") else source
    if url in (src, source):
        return False
    base = glob_base(src)
    if base is None:
        base = src.rstrip("/") + "/"
    rel = url[len(base):] if url.startswith(base) else os.path.basename(url)
    return hidden(rel)


async def list_sources(source: str | Sequence[str], store: Store, *,
                       match: str | None = DEFAULT_MATCH,
                       skipped: list[str] | None = None) -> list[str]:
    """The object URLs a source names: a list as given, or a prefix/glob expanded and sorted.

    A directory or prefix selects the objects whose base name matches ``match``
    (``fnmatch``; None selects all) and appends the others to ``skipped``: a
    ``notes.txt`` beside the data is not an error.  A glob selects what it
    matches and a named object is read as named (a non-CSUP one is then an error).
    """
    if not isinstance(source, str):
        return list(source)
    is_glob = has_glob(source)
    listed: list[str]
    if "://" not in source or source.startswith("file://"):
        path = source[len("file://"):] if source.startswith("file://") else source
        if is_glob:
            found = _glob.glob(path, recursive=True)
        elif os.path.isdir(path):
            found = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
        else:
            return [source]
        base = path if not is_glob else os.path.dirname(path.split("*")[0].split("?")[0])
        listed = sorted(p for p in found if os.path.isfile(p)
                        and not hidden(os.path.relpath(p, base)))
    elif not isinstance(store, Lister):
        if is_glob or source.endswith("/"):
            raise CsupError(f"store {store.name} cannot list objects", path=redact_url(source))
        return [source]
    elif is_glob:
        prefix = glob_base(source) or ""
        return sorted(u for u in await store.list(prefix) if fnmatch.fnmatchcase(u, source)
                      and not hidden(u[len(prefix):]))
    elif source.endswith("/"):
        listed = sorted(u for u in await store.list(source) if not hidden(u[len(source):]))
    else:
        return [source]
    if is_glob or match is None:
        return listed
    kept = [u for u in listed if fnmatch.fnmatch(u.rstrip("/").rsplit("/", 1)[-1], match)]
    if skipped is not None:
        chosen = set(kept)  # (once: not per object)
        skipped += [u for u in listed if u not in chosen]
    return kept
