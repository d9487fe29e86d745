"""The CLI starts without the heavy libraries: ``attnlab --version`` and ``--help`` import neither torch nor
transformers nor matplotlib (benchmarks/cold_start.py times them; this checks the cause, not the clock)."""

from __future__ import annotations

import json
import subprocess
import sys

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


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["serve", "--help"]])
def test_the_cli_answers_without_importing_heavy_libraries(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", CODE % (HEAVY,), *argv], capture_output=True, text=True,
                          check=True, timeout=120)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_import_attnlab_imports_no_torch_until_a_name_needs_it() -> None:
    code = ("import sys, attnlab; a = 'torch' in sys.modules; attnlab.attention; "
            "print(a, 'torch' in sys.modules, attnlab.MultiHeadAttention.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "attnlab.layers.multihead"]
