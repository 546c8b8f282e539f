"""The house's import graph, folder to folder, drawn from the code.

Every ``import`` of ``csup_async/`` and ``planner/`` (read with ``ast``: at the top of a
module or inside a function, relative or absolute, and the modules a lazy table names)
gives an arrow from the importer's folder to the imported one's (``planner`` is one
folder; ``csup_async/__init__.py`` is ``package``).  The picture keeps only the arrows
no longer path implies (the transitive reduction), so it shows the layers;
``python3 -m tests.support.import_graph`` prints it as a Mermaid graph, the text
docs/architecture.md embeds (its test checks they agree).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("csup_async", "planner")


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (path, is_package)
    return found


def folder(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "csup_async":
        return parts[0]
    return parts[1] if len(parts) > 1 else "package"


def folder_edges(root: Path = ROOT) -> dict[str, set[str]]:
    """folder -> the folders its modules import (its own left out)."""
    modules = _modules(root)
    out: dict[str, set[str]] = defaultdict(set)
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text())
        by_name = "import_module" in path.read_text()  # a lazy table names its modules
        for node in ast.walk(tree):
            targets: list[str] = []
            if by_name and isinstance(node, ast.Constant) and node.value in modules:
                targets = [str(node.value)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")[: len(name.split(".")) - node.level
                                            + (1 if is_package else 0)]
                    targets = [".".join(base + ([node.module] if node.module else []))]
                else:
                    targets = [node.module or ""]
                targets = [f"{t}.{a.name}" if f"{t}.{a.name}" in modules else t
                           for t in targets for a in node.names]
            for t in targets:
                if t.partition(".")[0] in PACKAGES and folder(t) != folder(name):
                    out[folder(name)].add(folder(t))
    return out


def reduced(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The arrows no path of two or more other arrows implies."""
    def reach(a: str, skip: str) -> set[str]:
        seen: set[str] = set()
        stack = [b for b in edges.get(a, ()) if b != skip]
        while stack:
            b = stack.pop()
            if b not in seen:
                seen.add(b)
                stack.extend(edges.get(b, ()))
        return seen
    return {a: {b for b in bs if b not in reach(a, b)} for a, bs in edges.items()}


def mermaid(root: Path = ROOT) -> str:
    edges = reduced(folder_edges(root))
    lines = ["graph BT"]
    lines += [f"  {a} --> {b}" for a in sorted(edges) for b in sorted(edges[a])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(mermaid())
