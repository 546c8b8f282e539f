"""The package's layering stays as designed: modules import one way, and only public names.

Read from the source with ``ast`` (nothing is imported), over ``csup_async/`` and
``planner/``.  Every import counts, at the top of a module or inside a function
(a lazy import is still a dependency), except those under ``if TYPE_CHECKING:``,
which never run.  Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``;
those implicit edges are not counted (a package's ``__init__`` re-exporting its
own modules would otherwise be a circle by construction).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("csup_async", "planner")

#: Import circles allowed on purpose, as sorted tuples of module names (none today).
ALLOWED_CYCLES: set[tuple[str, ...]] = set()


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


def _runtime_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node that may run: ``if TYPE_CHECKING:`` bodies left out."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                todo += child.orelse
                continue
            todo.append(child)
    return out


def _absolute(mod: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.name.split(".")
    if not mod.is_package:
        base.pop()
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _scan() -> tuple[dict[str, set[str]], list[ImportedName]]:
    """(module -> modules it imports, every ``from m import name`` of our modules)."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    names: list[ImportedName] = []
    for mod in modules.values():
        if mod.path is None:
            continue
        for node in _runtime_nodes(ast.parse(mod.path.read_text(), str(mod.path))):
            if isinstance(node, ast.Import):
                edges[mod.name] |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                target = _absolute(mod, node)
                if target not in modules:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:  # ``from pkg import module``
                        edges[mod.name].add(sub)
                    else:
                        edges[mod.name].add(target)
                    names.append(ImportedName(mod.name, target, alias.name, node.lineno))
    for deps in edges.values():
        deps.discard("")
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


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _parent(module: str) -> str:
    return module.rpartition(".")[0]


def test_the_scan_sees_the_package() -> None:
    """The checks below look at real modules and real imports (a broken walk finds none)."""
    edges, names = _scan()
    assert "csup_async.reader" in edges and "planner.plan" in edges
    assert "planner.coalescing" in edges["planner.plan"]
    assert "csup_async.bsup" in edges["csup_async.format"]
    lazy = {n.name for n in names if n.importer == "csup_async.cli.commands"}
    assert "describe_file" in lazy  # imported inside a function only


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
