"""The trained models attnlab ships inside the package, each a folder here found by its name.

A folder holds what ``attnlab train`` writes for a final model (``model.safetensors``, ``config.json``) and the
log of the run that made it; the Makefile target named in :data:`MODELS` reproduces it from scratch.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MODELS", "bundled_folder"]

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
