"""Kinds of model: what a model reads, how it runs, what it can do and what it costs, one module per kind.

:data:`KIND` maps each name :func:`attnlab.locate` answers (``"huggingface"``, ``"classifier"``, ``"translator"``,
``"lm"``) to its :class:`Kind`; :class:`Model` loads a model once and runs it through its kind, and every surface
(``Model.run``, the commands, the lab, the suites, circuits) asks the kind instead of comparing names:
``model.spec.able("ablate")``, ``outcome.answer``, ``outcome.told()``.  A new kind is one module here and one row
of :data:`KIND` (and of :data:`attnlab.KINDS`, the words messages use); CONTRIBUTING.md shows it.
"""

from __future__ import annotations

from .._bundled import FORMATS, KINDS, KindInfo
from ._base import CAPABILITIES, KIND, UNBOUNDED, Budget, Cost, Forward, Kind, Model, Outcome, TooCostlyError
from ._hooked import TextModel
from ._trace import trace_text
from .classifier import ClassifierKind
from .encoder import EncoderKind
from .hf_lm import HFLanguageModelKind
from .lm import LanguageModelKind
from .translator import TranslatorKind

__all__ = ["CAPABILITIES", "KIND", "UNBOUNDED", "Budget", "Cost", "Forward", "Kind", "Model", "Outcome",
           "TextModel", "TooCostlyError", "kind_of", "register", "trace_text",
           "unregister"]

# The one table of kinds, keyed like attnlab.KINDS (tests/kinds checks the two agree): one object per module here.
KIND.update({k.name: k for k in (EncoderKind(), ClassifierKind(), TranslatorKind(), LanguageModelKind(),
                                 HFLanguageModelKind())})


def kind_of(model: object) -> Kind:
    """The kind of ``model``: a bundled name or a folder (read from its files, nothing loaded), or a loaded
    :class:`Model`."""
    if isinstance(model, Model):
        return model.spec
    from .._bundled import locate

    return KIND[locate(model).kind]  # type: ignore[arg-type]


def register(kind: Kind, info: KindInfo, format: str | None = None) -> None:
    """Add ``kind`` to the house: its row of :data:`KIND`, the words messages use (:data:`attnlab.KINDS`), and the
    ``"format"`` prefix of the ``config.json`` that marks its folders (:func:`attnlab.locate` reads it).  Every
    surface then serves it as far as its capabilities go (CONTRIBUTING.md, "A new kind")."""
    if kind.name in KIND:
        raise ValueError(f"a kind named {kind.name!r} exists already: {KIND[kind.name]!r}")
    KIND[kind.name] = kind
    KINDS[kind.name] = info
    if format is not None:
        FORMATS[format] = kind.name


def unregister(name: str) -> None:
    """Remove a kind :func:`register` added (a test's throwaway kind)."""
    KIND.pop(name, None)  # type: ignore[call-overload]
    KINDS.pop(name, None)  # type: ignore[call-overload]
    for prefix in [p for p, k in FORMATS.items() if k == name]:
        del FORMATS[prefix]
