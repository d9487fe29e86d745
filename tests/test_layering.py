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
