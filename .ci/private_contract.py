"""An import-linter contract type: no subpackage of ROOT imports a private module of another subpackage
(``ROOT.pkg._mod`` or anything below it) from outside ``ROOT.pkg``.  Top-level private modules (``ROOT._x``) are
package-wide internals and allowed.  Private *names* imported from a public module are checked by ruff's
conventions and review, not here (the import graph records modules only)."""

from __future__ import annotations

from importlinter import Contract, ContractCheck, fields, output


def _owner(module: str, root: str) -> str | None:
    """The subpackage ``ROOT.pkg`` a module belongs to (None for ROOT itself and its top-level modules)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 and parts[0] == root else None


def _private(module: str, root: str) -> bool:
    """Whether ``module`` sits at or below a private module of a subpackage (``ROOT.pkg._x...``)."""
    parts = module.split(".")
    return parts[0] == root and len(parts) > 2 and any(p.startswith("_") for p in parts[2:])


class PrivateModulesContract(Contract):
    root = fields.StringField()

    def check(self, graph, verbose: bool) -> ContractCheck:  # type: ignore[no-untyped-def]
        root = str(self.root)
        bad = []
        for importer in sorted(graph.modules):
            if not importer.startswith(root + "."):
                continue
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                owner = _owner(imported, root)
                if owner and _private(imported, root) and not (importer == owner or importer.startswith(owner + ".")):
                    bad.append((importer, imported))
        return ContractCheck(kept=not bad, metadata={"imports": bad})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported in check.metadata["imports"]:
            output.print_error(f"{importer} imports {imported}, a private module of another package: export the "
                               f"name from the package and import it from there", bold=False)
            output.new_line()
