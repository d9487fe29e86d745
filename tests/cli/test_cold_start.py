"""The CLI starts without the heavy libraries: ``attnlab --version`` and ``--help`` (``train TASK --help`` too, whose
defaults come from the configs) import neither torch nor transformers nor matplotlib (benchmarks/cold_start.py
times them; this checks the cause, not the clock)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "transformers", "matplotlib", "numpy", "fastapi", "uvicorn")

CODE = """
import json, sys
from attnlab.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(%r))))
"""


TRAIN_HELP = [["train", task, "--help"] for task in ("classify", "translate", "lm", "induction")]


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["serve", "--help"], ["train", "--help"], *TRAIN_HELP])
def test_the_cli_answers_without_importing_heavy_libraries(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", CODE % (HEAVY,), *argv], capture_output=True, text=True,
                          check=True, timeout=120)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_import_attnlab_imports_no_torch_until_a_name_needs_it() -> None:
    code = ("import sys, attnlab; a = 'torch' in sys.modules; attnlab.attention; "
            "print(a, 'torch' in sys.modules, attnlab.MultiHeadAttention.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "attnlab.layers.multihead"]


def test_show_on_the_bundled_model_imports_neither_transformers_nor_sympy(tmp_path: Path) -> None:
    """What made a cold `attnlab show` take 7 s: transformers' modeling code (MiniLM now runs on attnlab's own
    BertEncoder) and sympy (torch.broadcast_shapes' first call imports it; the mask checks no longer call it)."""
    argv = ["show", "The cat sat on the mat.", "--out", str(tmp_path / "out")]
    done = subprocess.run([sys.executable, "-c", CODE % (("transformers", "sympy", "torch"),), *argv],
                          capture_output=True, text=True, check=True, timeout=300)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["torch"], done.stderr
    assert (tmp_path / "out" / "heatmap.png").is_file()
