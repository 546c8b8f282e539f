"""The text form of a filter (``--where``, ``filter="..."``): tokens and a recursive-descent
parser into the expressions of :mod:`.filters`.

Kept apart from the expressions so that each file holds one job: the model, its
evaluation and zone truth in :mod:`.filters`; reading the text a user types here.

Grammar of the text form (keywords case-insensitive)::

    filter    := disjunct ("or" disjunct)*
    disjunct  := unary ("and" unary)*
    unary     := "not" unary | "(" filter ")" | predicate
    predicate := path op literal
               | path ["not"] "in" "(" literal ("," literal)* ")"
               | path ["not"] "between" literal "and" literal
               | path ["not"] "like" string
               | path "is" ["not"] "null"
               | path "startswith" string
    op        := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    literal   := integer | float | string | true | false
    string    := 'text' (a quote doubled: 'it''s') | "text" (backslash escapes: "say \"hi\"")
    path      := a column path (planner.paths: dotted names, `backquoted` parts)

``x between a and b`` is ``x >= a and x <= b`` (SQL's and SuperDB's shorthand).
``like`` matches the whole string: ``%`` any run of characters, ``_`` one
character, a backslash escapes either (SuperDB's ``like``); it holds for string
values only.  Strings take single quotes (SQL) or double quotes (as SuperDB's
pipe expressions do); a column name that needs quoting takes backquotes.
"""

from __future__ import annotations

import re
from typing import Any

from csup_async.model.errors import CsupError

from .filters import And, Compare, Expr, IsIn, IsNull, Like, Not, Or, StartsWith
from .literals import FilterError
from .paths import parse_path

__all__ = ["parse_filter"]

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)(?![\w.`])
    | (?P<str>'(?:[^']|'')*')
    | (?P<dstr>"(?:[^"\\]|\\.)*")
    | (?P<op>==|!=|<>|<=|>=|=|<|>)
    | (?P<punct>[(),])
    | (?P<path>(?:`(?:[^`]|``)*`|[A-Za-z_]\w*)(?:`(?:[^`]|``)*`|\w+|\.)*)
    )""", re.VERBOSE)
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "true", "false", "startswith", "like",
             "between"}
#: what a string literal looks like here, for the errors that meet an unquoted one
_STRING_HINT = "strings take quotes: 'error' or \"error\""


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "'": "'", "b": "\b", "f": "\f", "n": "\n",
            "r": "\r", "t": "\t"}


def _double_quoted(raw: str, at: int, text: str) -> str:
    """The text of a double-quoted literal: SuperDB's (JSON's) backslash escapes,
    ``\\'`` too."""
    out, i, body = [], 0, raw[1:-1]
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1: i + 2]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", body[i + 2: i + 6]):
            out.append(chr(int(body[i + 2: i + 6], 16)))
            i += 6
        else:
            raise FilterError(f"filter {text!r} at position {at}: a double-quoted string "
                              f"with the escape \\{e} (one of \\\" \\\\ \\/ \\' \\b "
                              "\\f \\n \\r \\t \\uXXXX)")
    return "".join(out)


def _unreadable(text: str, pos: int) -> FilterError:
    """The error for text no token starts with, saying what was likely meant."""
    rest = text[pos:pos + 20]
    hint = ""
    if rest[:1] in "'\"":
        hint = f" (a string that is not closed: end it with {rest[0]})"
    elif rest[:1] == "`":
        hint = " (a quoted column name that is not closed: end it with `)"
    return FilterError(f"cannot read the filter at position {pos}: {rest!r}{hint}; "
                       f"{_STRING_HINT}, `column names` backquotes")


def _tokens(text: str) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = []
    pos = 0
    n = len(text)
    while pos < n:
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            pos += len(text[pos:]) - len(text[pos:].lstrip())
            raise _unreadable(text, pos)
        kind = m.lastgroup or ""
        raw = m.group(kind)
        at = m.start(kind)
        if kind == "num":
            try:
                val: Any = float(raw) if any(c in raw for c in ".eE") else int(raw)
            except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
                raise FilterError(f"filter at position {at}: a number of {len(raw)} "
                                  f"characters is too long") from None
            out.append(("lit", val, at))
        elif kind == "str":
            out.append(("lit", raw[1:-1].replace("''", "'"), at))
        elif kind == "dstr":
            out.append(("lit", _double_quoted(raw, at, text), at))
        elif kind == "path" and raw.lower() in _KEYWORDS:
            word = raw.lower()
            if word in ("true", "false"):
                out.append(("lit", word == "true", at))
            else:
                out.append(("kw", word, at))
        elif kind == "path":
            try:
                out.append(("path", parse_path(raw), at))
            except CsupError as e:
                raise FilterError(f"filter {text!r} at position {at}: {e}") from None
        else:
            out.append((kind, raw, at))
        pos = m.end()
    return out


_WHAT = {"lit": "a literal (a number, a 'string', true or false)", "path": "a column path"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, Any, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def fail(self, what: str) -> FilterError:
        tok = self.peek()
        where = f"at position {tok[2]}" if tok else "at the end"
        return FilterError(f"filter {self.text!r}: expected {what} {where}")

    def take(self, kind: str, value: Any = None) -> Any:
        tok = self.peek()
        if tok is None or tok[0] != kind or (value is not None and tok[1] != value):
            raise self.fail(repr(value) if value is not None else _WHAT.get(kind, kind))
        self.i += 1
        return tok[1]

    def accept(self, kind: str, value: Any) -> bool:
        tok = self.peek()
        if tok is not None and tok[0] == kind and tok[1] == value:
            self.i += 1
            return True
        return False

    def filter(self) -> Expr:
        parts = [self.conj()]
        while self.accept("kw", "or"):
            parts.append(self.conj())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def conj(self) -> Expr:
        parts = [self.unary()]
        while self.accept("kw", "and"):
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def unary(self) -> Expr:
        if self.accept("kw", "not"):
            return Not(self.unary())
        if self.accept("punct", "("):
            e = self.filter()
            self.take("punct", ")")
            return e
        return self.predicate()

    def literal(self) -> Any:
        tok = self.peek()
        if tok is not None and tok[0] == "kw" and tok[1] == "null":
            raise FilterError(f"filter {self.text!r}: a comparison with null is never true; "
                              "use 'is null' / 'is not null'")
        if tok is not None and tok[0] in ("path", "kw"):  # a bare word: an unquoted string?
            word = self.text[tok[2]:].split(None, 1)[0].rstrip("),")
            raise FilterError(f"filter {self.text!r}: expected a literal at position "
                              f"{tok[2]}, not the name {word!r}; {_STRING_HINT} (comparing "
                              "two columns is not supported)")
        return self.take("lit")

    def string(self, what: str) -> str:
        tok = self.peek()
        value = self.literal()
        if not isinstance(value, str):
            at = tok[2] if tok is not None else len(self.text)
            raise FilterError(f"filter {self.text!r}: {what} takes a quoted string "
                              f"(position {at})")
        return value

    def predicate(self) -> Expr:
        tok = self.peek()
        if tok is None or tok[0] != "path":
            raise self.fail("a column path")
        c = self.take("path")
        tok = self.peek()
        if tok is not None and tok[0] == "op":
            self.i += 1
            op = {"=": "==", "<>": "!="}.get(tok[1], tok[1])
            return Compare(op, c, self.literal())
        if self.accept("kw", "is"):
            negated = self.accept("kw", "not")
            self.take("kw", "null")
            return IsNull(c, negated)
        negated = self.accept("kw", "not")
        e: Expr
        if self.accept("kw", "in"):
            self.take("punct", "(")
            vals = [self.literal()]
            while self.accept("punct", ","):
                vals.append(self.literal())
            self.take("punct", ")")
            e = IsIn(c, tuple(vals))
        elif self.accept("kw", "between"):
            e = self.between(c)
        elif self.accept("kw", "like"):
            e = Like(c, self.string("like"))
        elif negated:
            raise self.fail("'in', 'between' or 'like'")
        elif self.accept("kw", "startswith"):
            return StartsWith(c, self.string("startswith"))
        else:
            raise self.fail("a comparison, 'in', 'between', 'like', 'is null' or "
                            "'startswith'")
        return Not(e) if negated else e

    def between(self, c: tuple[str, ...]) -> Expr:
        """``c between low and high``: ``c >= low and c <= high`` (the ``and`` here is
        the between's, not a conjunction)."""
        low = self.literal()
        self.take("kw", "and")
        high = self.literal()
        return And((Compare(">=", c, low), Compare("<=", c, high)))


def parse_filter(text: str) -> Expr:
    """The filter a ``--where`` text describes (the grammar above)."""
    if not isinstance(text, str) or not text.strip():
        raise FilterError("an empty filter")
    p = _Parser(text)
    e = p.filter()
    if p.peek() is not None:
        raise p.fail("'and', 'or' or the end")
    return e
