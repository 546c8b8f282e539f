"""The column path syntax, and the one parser of column lists every entry point uses.

Field names come from data (JSON keys such as ``http.method``) and may hold
anything, so a bare ``a.b`` cannot name a field called ``a.b``.  The syntax:

* A path is record field names joined by ``.``: ``a.b`` is field ``b`` of
  record field ``a``.
* A name is written in backquotes when it holds ``.``, a backquote, ``,``,
  brackets, braces, angle brackets, is empty or starts or ends with
  whitespace; a literal backquote is doubled: ```a.b``` is ``("a.b",)``,
  ```a`.b`` is ``("a", "b")``, ```x``y``` is ``("x`y",)``, ```` `` ```` is
  the field named ``""``.
* Whitespace around a bare name is not part of it (``a , b`` lists ``a`` and
  ``b``); backquote a name whose spaces matter.
* ``""`` (no components) is the top-level value itself.  Bare empty names
  (``a..b``, ``.a``, ``a.``) are refused: a typo is far likelier than a field
  named ``""``, which ```` `` ```` names.

:func:`format_path` writes the canonical spelling (backquotes only where
needed); it is the spelling results are keyed by, error messages show and the
default column list uses, so a path printed anywhere can be passed back.

:func:`parse_columns` reads a column list: a string is a comma-separated list
(the CLI's ``-c`` and Python's ``scan("a,b")``; commas inside backquotes do not
split); a sequence holds one path per element, each a path string or a tuple
of field names taken literally (``("a.b",)`` is the field ``a.b``, no quoting
needed).  None or an empty sequence means every column; an empty entry in a
string list (``"a,"``, ``""``) is refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import InvalidPathError

_UNSAFE = frozenset(".`,[]{}<>")

#: A parsed column list: (canonical spelling, field names) per requested path.
Columns = tuple[tuple[str, tuple[str, ...]], ...]


def parse_path(path: str) -> tuple[str, ...]:
    """Split one column path into its field names (see the module docstring for the syntax)."""
    if not isinstance(path, str):
        raise InvalidPathError(f"a column path is a string, not {type(path).__name__}")
    if not path.strip():
        if path:
            raise InvalidPathError(f"column path {path!r} is only whitespace")
        return ()
    comps: list[str] = []
    i, n = 0, len(path)
    while True:
        while i < n and path[i].isspace():
            i += 1
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
            while i < n and path[i].isspace():
                i += 1
            end = i
        else:
            j = path.find(".", i)
            end = n if j < 0 else j
            comp = path[i:end].strip()
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
        if i == n or not path[i:].strip():
            raise InvalidPathError(f"column path {path!r} has an empty component")


def split_column_list(text: str) -> list[str]:
    """A comma-separated column list's entries (commas inside backquotes do not split)."""
    out: list[str] = []
    start, quoted = 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted  # a doubled backquote toggles twice: still inside
        elif ch == "," and not quoted:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def parse_columns(columns: Iterable[str | tuple[str, ...]] | str | None) -> Columns | None:
    """A column list as ``(canonical spelling, field names)`` per path, deduplicated.

    None (or an empty sequence) means every column.  See the module docstring
    for what a string and a sequence mean.
    """
    if columns is None:
        return None
    if isinstance(columns, str):
        entries = split_column_list(columns)
        if any(not e.strip() for e in entries):
            raise InvalidPathError(f"column list {columns!r} has an empty entry "
                                   "(leave the list out for every column)")
        parsed = [parse_path(e) for e in entries]
    else:
        if isinstance(columns, (bytes, bytearray)):
            raise InvalidPathError("a column list is a string or a sequence of paths")
        parsed = [_one(c) for c in columns]
    seen: set[tuple[str, ...]] = set()
    out: list[tuple[str, tuple[str, ...]]] = []
    for comps in parsed:
        if comps not in seen:
            seen.add(comps)
            out.append((format_path(comps), comps))
    return tuple(out) if out else None


def _one(c: object) -> tuple[str, ...]:
    if isinstance(c, str):
        return parse_path(c)
    if isinstance(c, tuple) and all(isinstance(x, str) for x in c):
        return c
    raise InvalidPathError(f"a column is a path string or a tuple of field names, not {c!r}")


def quote_component(name: str) -> str:
    """A field name as it must be written in a path (and in stream labels)."""
    if name and name == name.strip() and not _UNSAFE.intersection(name):
        return name
    return "`" + name.replace("`", "``") + "`"


def format_path(comps: tuple[str, ...]) -> str:
    """The canonical spelling of a parsed path; ``parse_path(format_path(c)) == c``."""
    return ".".join(map(quote_component, comps))
