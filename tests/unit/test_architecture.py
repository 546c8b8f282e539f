"""The package's layering stays as designed: modules import down the layers, in no circle,
and reach only public names of other modules.

Read from the source with ``ast`` (nothing is imported), over ``csup_async/`` and
``planner/``.  Every import counts: at the top of a module or inside a function (a lazy
import is still a dependency), under ``if TYPE_CHECKING:`` (a circle that only the type
checker sees is still a circle in the design: it merely hides from the runtime), and by
name (a module that calls ``importlib.import_module`` depends on every module it names in
a string: ``"csup_async.sync"``, or ``".options"`` in a package's ``_LAZY`` table).
Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``; those implicit edges
are not counted (a package's ``__init__`` re-exporting its own modules would otherwise be
a circle by construction).

The layer order, the allowances and how to change them are in docs/architecture.md.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("csup_async", "planner")

#: The layers, lowest first: each is one folder of ``csup_async/`` (``planner/`` is the
#: top-level package beside it).  A module may import from its own folder and from any
#: folder of a lower layer; folders that share a layer (``cli`` and ``spark``) import
#: neither each other nor anything above.  An entry ``x.*`` places the package ``x`` and
#: every module below it; any other entry places that one module; the longest entry wins.
#: A module no entry places fails ``test_every_module_has_a_layer``.
LAYERS: tuple[dict[str, tuple[str, ...]], ...] = (
    # errors, types, values, budgets and progress, numpy forms: plain definitions
    {"model": ("csup_async.model.*",)},
    # bytes to metadata and back, no I/O: CSUP, BSUP, VNG, SuperDB's header layout
    {"format": ("csup_async.format.*",)},
    # pure planning: plain data in, plain data out (see test_the_planner_does_no_io)
    {"planner": ("planner.*",)},
    {"stores": ("csup_async.stores.*",)},
    {"decode": ("csup_async.decode.*",)},
    # the result arrays and what is computed on them alone: filters, Arrow schemas, JSON
    {"arrays": ("csup_async.arrays.*",)},
    # runs a scan program: fetch, decode, assemble (CSUP, BSUP and SuperDB columns)
    {"scan": ("csup_async.scan.*",)},
    # one object: open a URL, tell its format, read it
    {"readers": ("csup_async.readers.*",)},
    {"datasets": ("csup_async.datasets.*",)},
    {"writers": ("csup_async.writers.*",)},
    # a lake reads its objects through the readers and loads them through the write side
    {"lake": ("csup_async.lake.*",)},
    # the synchronous face, polars and DuckDB
    {"sync": ("csup_async.sync.*",)},
    # ``import csup_async``: every public name, loaded by name on first use
    {"package": ("csup_async",)},
    {"cli": ("csup_async.cli.*",), "spark": ("csup_async.spark.*",)},
)

#: Imports against the layer order that exist today in modules being restructured
#: elsewhere, as (importer, imported) -> why.  Remove an entry with the import it allows:
#: ``test_every_allowance_is_still_needed`` fails on an entry nothing needs any more.
ALLOWED_CLIMBS: dict[tuple[str, str], str] = {}  # none

#: Import circles allowed for now, as sorted tuples of module names -> why.
ALLOWED_CYCLES: dict[tuple[str, ...], str] = {}  # none

#: Private attributes of other modules' objects reached today in modules being
#: restructured elsewhere, as (module that reaches, attribute) -> why.
ALLOWED_REACHES: dict[tuple[str, str], str] = {}  # none

#: What the planner may import from outside the project: computation only, no I/O, no
#: clock, no concurrency, so that planning is a pure function a test or a Spark driver runs.
PLANNER_IMPORTS = frozenset({
    "__future__", "bisect", "collections", "collections.abc", "dataclasses", "datetime",
    "enum", "fractions", "functools", "heapq", "ipaddress", "itertools", "math", "numpy",
    "operator", "re", "typing", "urllib.parse",
})


@dataclass(frozen=True)
class Module:
    name: str
    path: Path | None  # None for a compiled extension
    is_package: bool


@dataclass(frozen=True)
class ImportedName:
    importer: str
    module: str  # where the name is taken from
    name: str
    line: int


@dataclass(frozen=True)
class Reach:
    """``x._name`` (or ``getattr(x, "_name")``) in ``module``, where ``x`` is not its own."""

    module: str
    attr: str
    line: int
    text: str


@functools.cache
def _modules() -> dict[str, Module]:
    found: dict[str, Module] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = Module(".".join(parts), path, is_package)
        # compiled extensions: built (``.so``) or not yet (their ``.c`` source)
        for ext in sorted([*(ROOT / pkg).rglob("*.so"), *(ROOT / pkg).rglob("*.c")]):
            parts = [*ext.relative_to(ROOT).parts[:-1], ext.name.split(".")[0]]
            found[".".join(parts)] = Module(".".join(parts), None, False)
    return found


@functools.cache
def _trees() -> dict[str, ast.Module]:
    return {m.name: ast.parse(m.path.read_text(), str(m.path))
            for m in _modules().values() if m.path is not None}


def _resolve(mod: Module, level: int, name: str | None) -> str:
    """The absolute name of ``from <level dots><name> import``, seen from ``mod``."""
    if not level:
        return name or ""
    base = mod.name.split(".")
    if not mod.is_package:
        base.pop()
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _by_name(mod: Module, tree: ast.Module, modules: set[str]) -> set[str]:
    """The modules a module that calls ``import_module`` names in its string constants."""
    calls = any(isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Attribute) and n.func.attr == "import_module")
        or (isinstance(n.func, ast.Name) and n.func.id == "import_module"))
        for n in ast.walk(tree))
    if not calls:
        return set()
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value:
            text = n.value
            level = len(text) - len(text.lstrip("."))
            target = _resolve(mod, level, text[level:] or None)
            if target in modules and target != mod.name:
                found.add(target)
    return found


def _imports(mod: Module, tree: ast.Module, modules: set[str],
             ) -> tuple[set[str], list[ImportedName]]:
    """(the modules ``mod`` imports, every ``from m import name`` of our modules in it)."""
    edges: set[str] = set()
    names: list[ImportedName] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            edges |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, node.level, node.module)
            if target not in modules:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                edges.add(sub if sub in modules else target)  # ``from pkg import module``
                names.append(ImportedName(mod.name, target, alias.name, node.lineno))
    edges |= _by_name(mod, tree, modules)
    edges.discard("")
    return edges, names


@functools.cache
def _scan() -> tuple[dict[str, set[str]], list[ImportedName]]:
    """(module -> modules it imports, every ``from m import name`` of our modules)."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    names: list[ImportedName] = []
    for name, tree in _trees().items():
        edges[name], found = _imports(modules[name], tree, set(modules))
        names += found
    return edges, names


def _cycles(edges: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)
    and the modules that import themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                found.append(tuple(sorted(comp)))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _layer(module: str) -> tuple[int, str] | None:
    """(rank, group) of a module: the longest entry of LAYERS that places it."""
    best: tuple[int, int, str] | None = None  # (entry length, rank, group)
    for rank, groups in enumerate(LAYERS):
        for group, entries in groups.items():
            for entry in entries:
                pkg = entry.removesuffix(".*")
                places = module == pkg or (entry.endswith(".*") and module.startswith(pkg + "."))
                if places and (best is None or len(pkg) > best[0]):
                    best = (len(pkg), rank, group)
    return None if best is None else (best[1], best[2])


def _climbs(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import of a module in a higher layer, or in another group of the same one."""
    bad = []
    for importer, deps in edges.items():
        here = _layer(importer)
        for dep in deps:
            there = _layer(dep)
            if here is None or there is None:
                continue  # unplaced modules fail test_every_module_has_a_layer
            if there[0] > here[0] or (there[0] == here[0] and there[1] != here[1]):
                bad.append((importer, dep))
    return sorted(bad)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _parent(module: str) -> str:
    return module.rpartition(".")[0]


def _is_own(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: an object whose privates this module may use."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "super")


def _attr_calls(tree: ast.AST) -> Iterator[tuple[ast.Call, str, ast.expr, str]]:
    """``getattr``/``setattr``/``hasattr``/``delattr`` of a literal attribute name, as
    (call, which of the four, object, attribute)."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            yield node, node.func.id, node.args[0], node.args[1].value


def _bound(stmt: ast.stmt) -> set[str]:
    """The names a statement of a module's or a class's body binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, ast.Assign):
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return {stmt.target.id}
    if isinstance(stmt, (ast.If, ast.Try, ast.With)):
        inner = [*stmt.body, *getattr(stmt, "orelse", []), *getattr(stmt, "finalbody", []),
                 *(s for h in getattr(stmt, "handlers", []) for s in h.body)]
        return set().union(*(_bound(s) for s in inner)) if inner else set()
    return set()


def _members(tree: ast.Module) -> set[str]:
    """The attributes this module's classes have: in a class body, or used on
    ``self``/``cls`` (directly or with ``setattr``/``object.__setattr__``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                out |= _bound(stmt)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in ("self", "cls"):
            out.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "__setattr__" and len(node.args) >= 2 \
                and _is_own(node.args[0]) and isinstance(node.args[1], ast.Constant):
            out.add(str(node.args[1].value))
    out |= {name for _, verb, obj, name in _attr_calls(tree)
            if verb == "setattr" and _is_own(obj)}
    return out


def _defined(tree: ast.Module) -> set[str]:
    """Every private name this module gives a meaning: its own names, its classes'
    members, and attributes it sets on any object (``store._x = ...``)."""
    out = _members(tree) | set().union(*(_bound(s) for s in tree.body))
    out |= {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    out |= {name for _, verb, _, name in _attr_calls(tree) if verb == "setattr"}
    return {n for n in out if _private(n)}


def _reaches(trees: dict[str, ast.Module]) -> list[Reach]:
    """Private attributes reached on an object that is not the module's own: ``x._name``
    where ``_name`` is no member of a class of this module but one of our modules gives
    it a meaning (another module's class, or an attribute set on a foreign object, which
    is a reach too).  A private attribute of a foreign library (``sys._getframe``) is
    not ours to judge."""
    members = {m: _members(t) for m, t in trees.items()}
    owners: dict[str, set[str]] = defaultdict(set)
    for m, t in trees.items():
        for name in _defined(t):
            owners[name].add(m)
    found = []
    for m, tree in sorted(trees.items()):
        hits = [(n.lineno, n.attr, ast.unparse(n)) for n in ast.walk(tree)
                if isinstance(n, ast.Attribute) and _private(n.attr) and not _is_own(n.value)]
        hits += [(c.lineno, name, ast.unparse(c)) for c, _, obj, name in _attr_calls(tree)
                 if _private(name) and not _is_own(obj)]
        for line, attr, text in sorted(hits):
            if attr not in members[m] and attr in owners:
                found.append(Reach(m, attr, line, text))
    return found


@functools.cache
def _package_reaches() -> tuple[Reach, ...]:
    return tuple(_reaches(_trees()))


def _external_imports(tree: ast.Module) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return {m for m in out if m.partition(".")[0] not in PACKAGES}


# --- the checks ------------------------------------------------------------------------


def test_the_scan_sees_the_package() -> None:
    """The checks below look at real modules and real imports (a broken walk finds none)."""
    edges, names = _scan()
    assert "csup_async.readers.reader" in edges and "planner.plan" in edges
    assert "planner.coalescing" in edges["planner.plan"]
    assert "csup_async.format.bsup" in edges["csup_async.format.csup"]
    lazy = {n.name for n in names if n.importer == "csup_async.cli.commands"}
    assert "describe_file" in lazy  # imported inside a function only
    assert "csup_async.readers.opening" in edges["csup_async"]  # by name, from the _LAZY table
    assert sum(map(len, edges.values())) > 500


def test_the_walk_counts_every_kind_of_import() -> None:
    """Top-level, lazy, TYPE_CHECKING-only and by-name imports are all dependencies."""
    mod = Module("pkg.a", None, False)
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.sub", "pkg.sub.f"}
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "import importlib\n"
        "from . import b\n"
        "if TYPE_CHECKING:\n"
        "    from .c import C\n"
        "def f():\n"
        "    from pkg.d import _d\n"
        "    return importlib.import_module('pkg.e')\n"
        "from .sub import f\n")
    edges, names = _imports(mod, tree, known)
    assert edges == {"pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.sub.f"}
    assert ("pkg.d", "_d") in {(n.module, n.name) for n in names}
    lazy = Module("pkg", None, True)
    table = ast.parse("import importlib\n"
                      "_LAZY = {'X': '.b', 'Y': '.sub'}\n"
                      "def __getattr__(n):\n"
                      "    return importlib.import_module(_LAZY[n], __name__)\n")
    assert _imports(lazy, table, known)[0] == {"pkg.b", "pkg.sub"}


def test_every_module_has_a_layer() -> None:
    """A new module is placed in LAYERS (and so in docs/architecture.md's diagram) on
    purpose, not by default."""
    unplaced = sorted(m for m in _modules() if _layer(m) is None)
    assert not unplaced, "modules in no layer (add them to LAYERS): " + ", ".join(unplaced)


def test_imports_go_down_the_layers() -> None:
    edges, _ = _scan()
    bad = [c for c in _climbs(edges) if c not in ALLOWED_CLIMBS]
    assert not bad, "imports against the layer order (importer -> imported): " + "; ".join(
        f"{a} ({_layer(a)}) -> {b} ({_layer(b)})" for a, b in bad)


def test_the_layer_rule_catches_a_climb() -> None:
    edges = {"csup_async.decode.scan": {"csup_async.readers.reader", "csup_async.model.types"},
             "csup_async.cli.output": {"csup_async.spark.schema", "csup_async.arrays.jsonout"},
             "csup_async.readers.reader": {"csup_async.scan.scan", "planner.plan"},
             "planner.plan": {"csup_async.format.meta"}}
    assert _climbs(edges) == [("csup_async.cli.output", "csup_async.spark.schema"),
                              ("csup_async.decode.scan", "csup_async.readers.reader")]
    assert _layer("csup_async.model.redact") == (0, "model")
    assert _layer("csup_async")[1] == "package"  # the root is no folder's
    assert _layer("csup_async.stores.s3") == _layer("csup_async.stores")


def test_the_import_graph_has_no_circles() -> None:
    edges, _ = _scan()
    cycles = [c for c in _cycles(edges) if c not in ALLOWED_CYCLES]
    assert not cycles, "modules that import each other (directly or around a circle): " + \
        "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    assert _cycles({"a": {"a"}}) == [("a",)]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_private_name_crosses_a_module_boundary() -> None:
    """A leading underscore means "this module's own": no other module imports it.  A
    private *module* (``stores/_aio.py``) is its package's own: only its siblings import it."""
    _, names = _scan()
    modules = _modules()
    bad = []
    for n in names:
        full = f"{n.module}.{n.name}"
        if full in modules:  # a module imported by name: private ones stay in their package
            if _private(n.name) and _parent(n.importer) != n.module and n.importer != n.module:
                bad.append(n)
        elif _private(n.name):
            bad.append(n)
        elif _private(n.module.rpartition(".")[2]) and _parent(n.module) != _parent(n.importer):
            bad.append(n)  # ``from pkg._private import x`` from outside ``pkg``
    assert not bad, "private names imported across modules: " + ", ".join(
        f"{n.importer}:{n.line} takes {n.name} from {n.module}" for n in bad)


def test_no_private_attribute_is_reached_across_modules() -> None:
    """``reader._available`` from another module couples it to how Reader keeps its bytes
    today: such a need becomes a public name or a method of the owner."""
    bad = [r for r in _package_reaches() if (r.module, r.attr) not in ALLOWED_REACHES]
    assert not bad, "private attributes of other modules' objects: " + "; ".join(
        f"{r.module}:{r.line} {r.text}" for r in bad)


def test_the_reach_finder_finds_a_reach() -> None:
    owner = ast.parse(
        "class Reader:\n"
        "    _slots = ()\n"
        "    def __init__(self):\n"
        "        self._paths = []\n"
        "    def same(self, other):\n"
        "        return other._paths == self._paths\n")
    user = ast.parse(
        "import sys\n"
        "def f(r, store):\n"
        "    store._scope = 1\n"
        "    sys._getframe()\n"
        "    super()._paths\n"
        "    return r._paths, getattr(r, '_slots'), r._none_of_ours\n")
    found = {(r.module, r.attr) for r in _reaches({"m.reader": owner, "m.user": user})}
    assert found == {("m.user", "_paths"), ("m.user", "_slots"), ("m.user", "_scope")}


def test_every_allowance_is_still_needed() -> None:
    """An allowance outlives its reason silently unless this fails: remove the entry."""
    edges, _ = _scan()
    modules = _modules()
    climbs = set(_climbs(edges))
    cycles = set(_cycles(edges))
    reaches = {(r.module, r.attr) for r in _package_reaches()}
    stale = [f"ALLOWED_CLIMBS {k}" for k in ALLOWED_CLIMBS if k not in climbs]
    stale += [f"ALLOWED_CYCLES {k}" for k in ALLOWED_CYCLES if k not in cycles]
    stale += [f"ALLOWED_REACHES {k}" for k in ALLOWED_REACHES if k not in reaches]
    stale += [f"LAYERS entry {e}" for groups in LAYERS for entries in groups.values()
              for e in entries
              if not any(m == e.removesuffix(".*") for m in modules)]
    assert not stale, "allowances nothing needs any more (remove them): " + "; ".join(stale)


def test_the_planner_does_no_io() -> None:
    """The planner imports, besides the data model below it, only computation: an import
    of ``asyncio``, ``os`` or a store there would make planning depend on the world."""
    trees = _trees()
    bad = {m: sorted(_external_imports(t) - PLANNER_IMPORTS)
           for m, t in trees.items() if m.partition(".")[0] == "planner"}
    bad = {m: v for m, v in bad.items() if v}
    assert not bad, f"the planner imports outside its list: {bad}"
    assert {"asyncio", "os"} <= set(sys.stdlib_module_names) - PLANNER_IMPORTS


def _order() -> str:
    return " < ".join(next(iter(g)) if len(g) == 1 else "{" + ", ".join(g) + "}"
                      for g in LAYERS)


def test_the_documented_layers_are_the_tested_ones() -> None:
    """docs/architecture.md states the order and names each layer in its table: both as
    LAYERS has them, so a reader learns the rule the test enforces."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    assert f"`{_order()}`" in section, f"docs/architecture.md should state `{_order()}`"
    rows = [line.split("|")[1].strip() for line in section.splitlines()
            if line.startswith("| `")]
    assert rows == [", ".join(f"`{g}`" for g in groups) for groups in LAYERS]


def test_no_folder_shadows_a_public_name() -> None:
    """Importing ``csup_async.<folder>.x`` binds ``csup_async.<folder>`` to the folder: a
    folder named like a public name (``write``) would replace that name for everyone."""
    tree = _trees()["csup_async"]
    tables = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id in ("__all__", "_LAZY") for t in n.targets)]
    public = {e.value for table in tables for e in ast.walk(table)
              if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    assert {"write", "open", "Reader"} <= public
    folders = {m.name.split(".")[1] for m in _modules().values()
               if m.is_package and m.name.count(".") == 1 and m.name.startswith("csup_async.")}
    assert "readers" in folders
    assert not folders & public, f"folders named like public names: {folders & public}"


# --- the house's measures: folders, sizes, reaches from tests ---------------------------

#: Longest file, in lines, outside tests and the C kernels: a file past it holds more
#: than one job.
MAX_FILE_LINES = 800
#: Longest function, in lines (its decorators and docstring included).
MAX_FUNCTION_LINES = 100

#: Files over MAX_FILE_LINES today, path -> why; the list only shrinks.
ALLOWED_LONG_FILES: dict[str, str] = {}  # none

#: Functions over MAX_FUNCTION_LINES today, "path:qualified name" -> why; only shrinks.
ALLOWED_LONG_FUNCTIONS: dict[str, str] = {}  # none

#: Private attributes and names of the package reached from tests today, as
#: (test file, name); the list only shrinks (a test asserts through public names).
ALLOWED_TEST_REACHES: frozenset[tuple[str, str]] = frozenset()  # none

#: Benchmarks that import test code (none: the servers and data both use live in bench/);
#: the list only shrinks.
ALLOWED_BENCH_IMPORTS: frozenset[tuple[str, str]] = frozenset()  # none


def _folder(module: str) -> str:
    """The room a module lives in: ``planner``, a folder of ``csup_async``, or the root."""
    parts = module.split(".")
    if parts[0] != "csup_async":
        return parts[0]
    return parts[1] if len(parts) > 1 and _modules().get(".".join(parts[:2]), Module(
        "", None, False)).is_package else "csup_async"


def _folder_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for a, deps in edges.items():
        for b in deps:
            fa, fb = _folder(a), _folder(b)
            if fa != fb:
                out[fa].add(fb)
    return out


def _project_files() -> list[Path]:
    """The Python files measured: the package, the planner and the benchmarks."""
    return [p for d in (*PACKAGES, "bench") for p in sorted((ROOT / d).rglob("*.py"))]


def _long_functions(path: Path) -> dict[str, int]:
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    lines = (child.end_lineno or child.lineno) - first + 1
                    if lines > MAX_FUNCTION_LINES:
                        found[name] = lines
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text()), "")
    return found


def test_no_folder_pair_imports_each_other() -> None:
    """Two folders that import each other are one room in two places: the layers
    (above) forbid it already; this says it in the house's own words."""
    edges = _folder_edges(_scan()[0])
    pairs = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a]
                    if a in edges.get(b, ())})
    assert "scan" in edges["readers"] and "planner" in edges["scan"]
    assert not pairs, f"folders that import each other: {pairs}"


def test_the_root_holds_at_most_three_modules() -> None:
    """A module at ``csup_async/``'s root belongs to no layer's folder."""
    root = sorted(p.name for p in (ROOT / "csup_async").glob("*.py"))
    assert "__init__.py" in root and len(root) <= 3, root


def test_no_file_is_too_long() -> None:
    long = {str(p.relative_to(ROOT)): n for p in _project_files()
            if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES}
    new = sorted(set(long) - set(ALLOWED_LONG_FILES))
    stale = sorted(set(ALLOWED_LONG_FILES) - set(long))
    assert not new, f"files over {MAX_FILE_LINES} lines: {[(f, long[f]) for f in new]}"
    assert not stale, f"ALLOWED_LONG_FILES entries no longer needed (remove them): {stale}"


def test_no_function_is_too_long() -> None:
    long = {f"{p.relative_to(ROOT)}:{name}": n for p in _project_files()
            for name, n in _long_functions(p).items()}
    new = sorted(set(long) - set(ALLOWED_LONG_FUNCTIONS))
    stale = sorted(set(ALLOWED_LONG_FUNCTIONS) - set(long))
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines: {[(f, long[f]) for f in new]}"
    assert not stale, f"ALLOWED_LONG_FUNCTIONS entries no longer needed (remove them): {stale}"


def test_the_length_rules_measure_what_they_say(tmp_path: Path) -> None:
    body = "\n".join(f"        x = {i}" for i in range(MAX_FUNCTION_LINES))
    path = tmp_path / "probe.py"
    path.write_text(f"class C:\n    @staticmethod\n    def f():\n{body}\n\n"
                    "def g():\n    return 1\n")
    assert _long_functions(path) == {"C.f": MAX_FUNCTION_LINES + 2}  # decorator, def, body


def _test_trees() -> dict[str, ast.Module]:
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text(), str(p))
            for p in sorted((ROOT / "tests").rglob("*.py"))}


def _foreign_roots(tree: ast.Module) -> set[str]:
    """The names a file binds to modules outside the package (``import asyncio``)."""
    return {(a.asname or a.name).partition(".")[0] for n in ast.walk(tree)
            if isinstance(n, ast.Import) for a in n.names
            if a.name.partition(".")[0] not in (*PACKAGES, "tests", "bench")}


def _rooted_in(node: ast.expr, roots: set[str]) -> bool:
    """``node`` is a dotted name starting at one of ``roots`` (``asyncio.events.Handle``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in roots


def _test_reaches(tree: ast.Module, owners: set[str]) -> set[str]:
    """The private names of the package ``tree`` reaches: ``x._name`` where the package
    gives ``_name`` a meaning and the file's own classes do not (and ``x`` is not a
    foreign module's name, as ``asyncio.events.Handle._run`` is the standard library's),
    and ``from csup_async.x import _name``."""
    own, foreign = _members(tree), _foreign_roots(tree)
    found: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and _private(n.attr) and not _is_own(n.value) \
                and n.attr in owners and n.attr not in own and not _rooted_in(n.value, foreign):
            found.add(n.attr)
        elif isinstance(n, ast.ImportFrom) and n.module and \
                n.module.partition(".")[0] in PACKAGES:
            found |= {a.name for a in n.names if _private(a.name)}
    found |= {name for _, _, obj, name in _attr_calls(tree)
              if _private(name) and not _is_own(obj) and name in owners
              and not _rooted_in(obj, foreign)}
    return found


def _reaches_from_tests() -> set[tuple[str, str]]:
    """(test file, private name of the package it reaches), over every test file."""
    owners: set[str] = set()
    for tree in _trees().values():
        owners |= _defined(tree)
    return {(path, name) for path, tree in _test_trees().items()
            for name in _test_reaches(tree, owners)}


def test_the_test_reach_finder_tells_ours_from_the_standard_librarys() -> None:
    """``store._client`` and ``from csup_async.x import _y`` are reaches; a private of a
    foreign module's object (``asyncio.events.Handle._run``) and the file's own are not."""
    tree = ast.parse("import asyncio\n"
                     "from csup_async.stores import _hidden\n"
                     "class Own:\n"
                     "    _mine = 1\n"
                     "def test(store, own):\n"
                     "    store._client\n"
                     "    own._mine\n"
                     "    asyncio.events.Handle._run\n"
                     "    setattr(store, '_flag', 1)\n"
                     "    getattr(asyncio.events.Handle, '_run')\n")
    owners = {"_client", "_mine", "_run", "_flag"}
    assert _test_reaches(tree, owners) == {"_client", "_hidden", "_flag"}


def test_tests_reach_no_new_private_name() -> None:
    """A test that reaches ``reader._plans`` breaks when the reader keeps its plans
    otherwise, though nothing a user sees changed: tests assert through public names."""
    found = _reaches_from_tests()
    new = sorted(found - ALLOWED_TEST_REACHES)
    stale = sorted(ALLOWED_TEST_REACHES - found)
    assert not new, f"private names reached from tests (make them public or test " \
        f"through the API): {new}"
    assert not stale, f"ALLOWED_TEST_REACHES entries no longer needed (remove them): {stale}"


def test_benchmarks_import_only_the_package() -> None:
    found = set()
    for p in sorted((ROOT / "bench").rglob("*.py")):
        for m in _external_imports(ast.parse(p.read_text())):
            if m.partition(".")[0] == "tests":
                found.add((str(p.relative_to(ROOT)), m))
    new = sorted(found - ALLOWED_BENCH_IMPORTS)
    stale = sorted(ALLOWED_BENCH_IMPORTS - found)
    assert not new, f"benchmarks importing test code: {new}"
    assert not stale, f"ALLOWED_BENCH_IMPORTS entries no longer needed (remove them): {stale}"


#: Objects whose class is replaced at run time, module -> why; the list only shrinks.
ALLOWED_CLASS_CHANGES: dict[str, str] = {
    "csup_async.stores.tls": "an SSL context made lazily: its class is swapped on first use",
}


def test_no_object_changes_its_class() -> None:
    """A reader that turns into another kind (``reader.__class__ = BsupReader``) skips
    that kind's constructor: the loader builds the right reader instead."""
    found = {m for m, tree in _trees().items() for n in ast.walk(tree)
             if isinstance(n, ast.Assign) and any(
                 isinstance(t, ast.Attribute) and t.attr == "__class__" for t in n.targets)}
    assert found == set(ALLOWED_CLASS_CHANGES), sorted(found ^ set(ALLOWED_CLASS_CHANGES))


def test_the_documented_import_graph_is_the_codes() -> None:
    """docs/architecture.md's picture of the house is the one the imports draw today."""
    from tests.support.import_graph import mermaid

    graph = mermaid()
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert f"```mermaid\n{graph}```" in page, \
        "docs/architecture.md's graph is stale: paste `python3 -m tests.support.import_graph`"
    assert "  readers --> scan" in graph and "  format --> model" in graph


def test_the_unit_tests_mirror_the_folders() -> None:
    """``tests/unit/<folder>/`` holds the tests of ``csup_async/<folder>/`` (``planner/``,
    ``package`` for the root's public names, ``bench`` for the benchmarks' own code):
    a newcomer finds a module's tests where the module is."""
    folders = {m.name.split(".")[1] for m in _modules().values()
               if m.is_package and m.name.count(".") == 1 and m.name.startswith("csup_async.")}
    tests = {p.name for p in (ROOT / "tests" / "unit").iterdir() if p.is_dir()
             and any(p.glob("test_*.py"))}
    assert "readers" in tests
    assert tests <= folders | {"planner", "package", "bench"}, sorted(
        tests - folders - {"planner", "package", "bench"})
