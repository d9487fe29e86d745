"""What import-linter's contracts cannot see: no module imports another module's private *name*
(``from .static import _pool``), inside a package or across packages.  (Private *modules* of another package are
refused by the contract in pyproject.toml, `make lint`.)  Top-level internals (``attnlab._validate``, ``_io``,
``_bundled``, ``_process_group``) are shared by design."""

from __future__ import annotations

import ast
from pathlib import Path

import attnlab

SRC = Path(attnlab.__file__).resolve().parent


def private_name_imports(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        package = path.relative_to(root.parent).with_suffix("").parts[:-1]  # the package a relative import starts in
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if not node.level and not (node.module or "").startswith("attnlab"):
                continue
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            target = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                if not alias.name.startswith("_") or alias.name == "__version__":
                    continue
                if target == ["attnlab"] or (SRC.parent.joinpath(*target, alias.name).is_dir()
                                             or SRC.parent.joinpath(*target, f"{alias.name}.py").is_file()):
                    continue  # a private module of its own package, or a top-level internal: not a name
                found.append(f"{path.relative_to(root.parent)}: from {'.'.join(target)} import {alias.name}")
    return found


def test_no_module_imports_another_modules_private_name() -> None:
    assert private_name_imports(SRC) == []


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the attnlab modules it imports (at its top or inside a function, ``TYPE_CHECKING`` included), by
    dotted name; an import of a package counts as an import of its ``__init__``."""
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    edges.add(full if full in modules else target)
            elif isinstance(node, ast.Import):
                edges.update(a.name for a in node.names)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    top = stack.pop()
                    on.discard(top)
                    component.add(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


# the one edge up the picture, by design (pyproject.toml's import-linter contract ignores it too): a trace shows
# itself in Jupyter through the viewer, imported on first display
ALLOWED_EDGE = ("attnlab.trace._types", "attnlab.viz.html")


def test_the_scan_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = import_graph(SRC)
    graph[ALLOWED_EDGE[0]].discard(ALLOWED_EDGE[1])
    assert circles(graph) == []


def test_no_benchmark_imports_a_private_module_of_attnlab() -> None:
    private = []
    for path in sorted((SRC.parent.parent / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("attnlab") and any(part.startswith("_") for part in name.split(".")):
                    private.append(f"{path.name}:{node.lineno} {name}")
    assert private == []
