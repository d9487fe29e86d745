"""The public face: every subpackage is reached the same way, `import attnlab` stays light, and no public name
means two things (the function `attnlab.capture` and the package `attnlab.capturing`)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types

import pytest

import attnlab


def test_every_subpackage_is_an_attribute_and_an_import_of_the_same_module() -> None:
    for name in attnlab.SUBPACKAGES:
        module = importlib.import_module(f"attnlab.{name}")
        assert isinstance(module, types.ModuleType) and getattr(attnlab, name) is module, name
        assert name in attnlab.__all__ and name in dir(attnlab), name


def test_capture_is_the_function_and_capturing_the_package() -> None:
    import attnlab.capturing as package

    assert callable(attnlab.capture) and not isinstance(attnlab.capture, types.ModuleType)
    assert attnlab.capture is package.capture and isinstance(package, types.ModuleType)
    assert attnlab.trace_text is attnlab.kinds.trace_text  # it runs any kind by name: in attnlab.kinds


def test_no_public_name_of_a_subpackage_is_also_a_subpackage_of_attnlab() -> None:
    clashes = []
    for name in attnlab.SUBPACKAGES:
        module = getattr(attnlab, name)
        for public in getattr(module, "__all__", ()):
            value = getattr(module, public)
            if public in attnlab.SUBPACKAGES and value is not getattr(attnlab, public):
                clashes.append(f"attnlab.{name}.{public}")
    assert clashes == [], f"these names mean something else than attnlab.<name>: {clashes}"


def test_every_name_in_all_exists() -> None:
    for module in (attnlab, *(getattr(attnlab, n) for n in attnlab.SUBPACKAGES)):
        missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
        assert missing == [], (module.__name__, missing)


@pytest.mark.slow
def test_import_attnlab_loads_no_heavy_library_and_no_model_package() -> None:
    code = ("import sys, json, attnlab; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('matplotlib', 'transformers', 'tokenizers', 'sklearn', 'scipy') or m.split('.')[:2] in "
            "[['attnlab', p] for p in ('models', 'data', 'training', 'analysis', 'explain', 'viz', 'suites')])))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(done.stdout) == []
