"""The trained models attnlab ships inside the package, each a folder here found by its name.

A folder holds what ``attnlab train`` writes for a final model (``model.safetensors``, ``config.json``) and the
log of the run that made it; the Makefile target named in :data:`MODELS` reproduces it from scratch.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelLoadError

__all__ = ["MODELS", "bundled_folder", "resolve"]

HERE = Path(__file__).resolve().parent

# name -> (what it is, the make target that trains it)
MODELS: dict[str, tuple[str, str]] = {
    "zh-sentiment": ("classifier", "make train-zh"),
    "dates-zh": ("translator", "make train-dates"),
    "tutorial-en-zh": ("translator", "make train-sentences"),
}


def bundled_folder(name: str) -> Path | None:
    """The folder of the bundled model ``name``, or None when ``name`` names none (or it is not built yet)."""
    if name not in MODELS:
        return None
    folder = HERE / name
    return folder if (folder / "config.json").is_file() else None


def resolve(model: object, kind: str) -> Path | None:
    """The folder of the bundled ``kind`` (``"classifier"`` or ``"translator"``) that ``model`` names, or None when
    ``model`` is no such name.  The name wins over a folder of the same name in the working directory (pass
    ``./NAME`` for that).

    Raises:
        ModelLoadError: the name is known but its folder was not built into this installation.
    """
    if not isinstance(model, str) or MODELS.get(model, ("", ""))[0] != kind:
        return None
    folder = bundled_folder(model)
    if folder is None:
        raise ModelLoadError(
            f"the bundled model {model!r} is not in this installation (attnlab/_bundled/{model}/ holds no "
            f"config.json); reproduce it from a source checkout with `{MODELS[model][1]}` and pass its output folder "
            f"as the model, or pass the --out folder of any `attnlab train` run")
    return folder
