"""No surface compares kind names (issue 40): a kind literal compared (``kind == "lm"``, ``kind in ("lm",
"classifier")``), a dict keyed by kinds and looked up, an ``isinstance`` chain over the trained classes, or
``is_language_model``, anywhere outside attnlab.kinds (attnlab._bundled, which reads a kind from a folder's files,
holds only the table of kinds' words); nor a kind compared in the lab's script (it reads what a model can do from
GET /api/models)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import attnlab
from attnlab._bundled import MODEL_KINDS

SRC = Path(attnlab.__file__).resolve().parent
ALLOWED = ("kinds",)
NAMES = set(MODEL_KINDS)
TRAINED = {"Classifier", "Translator", "LanguageModel"}


def _literals(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def kind_comparisons(source: str, where: str) -> list[str]:
    """Each place in ``source`` that compares or looks up a kind by name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Compare):
            if any(_literals(side) & NAMES for side in (node.left, *node.comparators)):
                found.append(f"{line} compares a kind name")
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if len(keys) >= 2 and set(keys) <= NAMES:
                found.append(f"{line} a table keyed by kind names")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            classes = node.args[1] if len(node.args) == 2 else None
            names = {c.id for c in ast.walk(classes) if isinstance(c, ast.Name)} if classes is not None else set()
            if names & TRAINED:
                found.append(f"{line} isinstance over a trained class")
        elif isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name == "is_language_model":
                found.append(f"{line} is_language_model")
    return found


def test_the_scan_finds_each_form() -> None:
    source = ('if m.kind == "lm": pass\nif kind in ("classifier", "translator"): pass\n'
              'k = {"classifier": 1, "lm": 2}.get(kind)\nisinstance(x, (Classifier, LanguageModel))\n'
              'is_language_model(m)\nif r.kind == "self": pass\nd = {"lm": 1}\n')
    assert sorted(kind_comparisons(source, "x")) == [
        "x:1 compares a kind name", "x:2 compares a kind name", "x:3 a table keyed by kind names",
        "x:4 isinstance over a trained class", "x:5 is_language_model"]


def test_no_module_outside_the_kinds_compares_kinds() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] in ALLOWED:
            continue
        found += kind_comparisons(path.read_text(encoding="utf-8"), str(rel))
    # attnlab._bundled defines the one table of kinds (KINDS: the words messages use); it compares none
    assert [f for f in found if not (f.startswith("_bundled/") and f.endswith("a table keyed by kind names"))] == []


def test_the_lab_script_reads_capabilities_not_kinds() -> None:
    script = (SRC / "serve" / "assets" / "lab.js").read_text(encoding="utf-8")
    kinds = "|".join(sorted(NAMES | {"encoder"}))
    assert re.findall(rf"""kind\s*[!=]==?\s*["'](?:{kinds})["']""", script) == []
