"""The column path syntax: dotted record field names, backquotes for names with dots.

Field names come from data (JSON keys and the like) and may contain anything,
so a bare ``a.b.c`` cannot name a field called ``b.c``.  A component may be
written in backquotes, with a literal backquote doubled: ```a`.`b.c``` is
``("a", "b.c")``, ```x``y``` is ``("x`y",)``.  The empty string is the path of
the top-level value itself (zero components).  Bare empty components
(``a..b``, ``.a``, ``a.``) are refused rather than read as a field named
``""``: a typo is far likelier, and ````` `` ````` still names such a field.
"""

from __future__ import annotations

from .errors import InvalidPathError

_UNSAFE = frozenset(".`[]{}<>")


def parse_path(path: str) -> tuple[str, ...]:
    """Split a column path into its field names (see the module docstring for the syntax)."""
    if not isinstance(path, str):
        raise InvalidPathError(f"a column path is a string, not {type(path).__name__}")
    if not path:
        return ()
    if "`" not in path:
        comps = path.split(".")
        if "" in comps:
            raise InvalidPathError(f"column path {path!r} has an empty component")
        return tuple(comps)
    return _parse_quoted(path)


def _parse_quoted(path: str) -> tuple[str, ...]:
    comps: list[str] = []
    i, n = 0, len(path)
    while True:
        if i < n and path[i] == "`":
            buf: list[str] = []
            i += 1
            while True:
                j = path.find("`", i)
                if j < 0:
                    raise InvalidPathError(f"column path {path!r} has an unclosed backquote")
                buf.append(path[i:j])
                if j + 1 < n and path[j + 1] == "`":
                    buf.append("`")
                    i = j + 2
                    continue
                i = j + 1
                break
            comps.append("".join(buf))
        else:
            j = path.find(".", i)
            end = n if j < 0 else j
            comp = path[i:end]
            if not comp:
                raise InvalidPathError(f"column path {path!r} has an empty component")
            if "`" in comp:
                raise InvalidPathError(
                    f"column path {path!r}: a backquote may only open a component")
            comps.append(comp)
            i = end
        if i == n:
            return tuple(comps)
        if path[i] != ".":
            raise InvalidPathError(
                f"column path {path!r}: expected '.' after a backquoted component")
        i += 1
        if i == n:
            raise InvalidPathError(f"column path {path!r} has an empty component")


def quote_component(name: str) -> str:
    """A field name as it must be written in a path (and in stream labels)."""
    if name and not _UNSAFE.intersection(name):
        return name
    return "`" + name.replace("`", "``") + "`"


def format_path(comps: tuple[str, ...]) -> str:
    """The canonical spelling of a parsed path; ``parse_path(format_path(c)) == c``."""
    return ".".join(map(quote_component, comps))
