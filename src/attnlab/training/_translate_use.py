"""A trained translator's confidence threshold, chosen on held-out data (:func:`calibrate_translator`), and the
bundling of a run's final model with float16 weights (:func:`bundle_translator`); using a translator is
``attnlab.trained``'s.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from .._io import atomic_write_text
from ..data import PairSplits
from ..errors import InputError
from ..trained import CONFIDENCE_KEY, Translation, Translator, load_translator, translator_folder

__all__ = ["bundle_translator", "calibrate_translator", "choose_threshold"]


def choose_threshold(valid: Sequence[float], negatives: Sequence[float], *, max_warned: float = 0.01,
                     checked: Sequence[bool] | None = None) -> dict[str, float]:
    """The highest confidence threshold that warns on at most ``max_warned`` of the ``valid`` confidences (a
    translation is warned when its confidence is strictly below the threshold): the ``k``-th smallest valid
    confidence with ``k = floor(max_warned * n)``; with the rates it gives on both sets (by the threshold alone).

    ``checked``: which valid translations other checks warn on anyway (a dates model's calendar checks); they use
    up that share first, so that all warnings together stay within it, and the threshold is the ``k``-th smallest
    confidence of the others with ``k = floor(max_warned * n) - sum(checked)``."""
    if not valid or not negatives:
        raise InputError(f"choosing a threshold needs valid and negative confidences, got {len(valid)} and "
                         f"{len(negatives)}")
    flags = [False] * len(valid) if checked is None else list(checked)
    if len(flags) != len(valid):
        raise InputError(f"checked needs one flag per valid confidence, got {len(flags)} for {len(valid)}")
    ranked = sorted(c for c, f in zip(valid, flags, strict=True) if not f)
    k = int(max_warned * len(valid)) - sum(flags)
    threshold = ranked[k] if 0 <= k < len(ranked) else -math.inf if k < 0 else math.inf
    return {"threshold": threshold,
            "valid_warned": sum(c < threshold for c in valid) / len(valid),
            "negatives_warned": sum(c < threshold for c in negatives) / len(negatives)}


def _translate_all(translator: Translator, texts: Sequence[str], size: int = 256) -> list[Translation | None]:
    """Greedy translations of ``texts`` in batches, without warnings (unknown characters are expected here);
    None for a text the translator refuses (too long, or nothing it knows: ``unknown_warning``), which the command
    refuses too."""
    limit = translator.max_length
    kept = [t for t in texts if len(translator.tokenizer.source_tokens(t)) <= limit and _readable(translator, t)]
    done: dict[str, Translation] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, len(kept), size):
            done.update((t.source, t) for t in translator.translate(kept[start:start + size], warn=False))
    return [done.get(t) for t in texts]


def _readable(translator: Translator, text: str) -> bool:
    """Whether ``translator`` reads ``text`` (it refuses a text of nothing it knows)."""
    try:
        translator.unknown(text)
    except InputError:
        return False
    return True


def _confidence(t: Translation | None) -> float:
    return -math.inf if t is None else t.confidence


def _negatives(task: str, valid_sources: Sequence[str], n: int, seed: int) -> list[tuple[str, str]]:
    """The held-out ``(text, kind)`` inputs to warn on: for dates :func:`attnlab.data.held_out_negatives`; for any
    other task its non-dates (other languages' names, times, numbers) and garbled valid sources."""
    from ..data import garble, held_out_negatives

    negatives = held_out_negatives(n, seed=seed)
    if task == "dates":
        return negatives
    import random

    rng = random.Random(f"garbled sources {seed}")
    foreign = [pair for pair in negatives if pair[1] == "non_date"][: n // 2]
    return foreign + [(garble(rng.choice(valid_sources), rng), "garbled") for _ in range(n - len(foreign))]


def calibrate_translator(model: str | os.PathLike[str], *, n_negatives: int = 3_000, seed: int = 0,
                         max_warned: float = 0.01, data: PairSplits | None = None) -> dict[str, Any]:
    """Choose the confidence threshold of a translator on held-out data and store it in its model folder's
    ``bundled.json`` under ``"confidence"``: the task's valid split (never trained on) is the side to leave
    alone (at most ``max_warned`` of it warned, by the threshold and the checks together), ``n_negatives``
    generated inputs (:func:`_negatives`) the side to warn on.  The record holds the threshold, both rates by
    the threshold alone, and for a dates model the rates with the calendar and ambiguity checks too (what
    :meth:`Translator.translate` warns on).  ``data``: the splits the model was trained on, when its run cannot
    make them again (they were passed in memory)."""
    from ._translate_run import load_task

    folder = translator_folder(model)
    translator = load_translator(folder)
    translator.threshold = None
    runinfo = translator.run
    valid = (data if data is not None else load_task(runinfo["data"], runinfo.get("data_options"))).valid
    negatives = _negatives(str(runinfo["data"]), list(valid.source), n_negatives, seed)
    got_valid = _translate_all(translator, list(valid.source))
    got_neg = _translate_all(translator, [text for text, _ in negatives])
    def doubted(t: Translation | None) -> bool:  # what the user is warned of (a refused input counts as warned)
        return t is None or bool(translator.doubts(t.source, t.text, t.confidence))

    chosen = choose_threshold([_confidence(t) for t in got_valid], [_confidence(t) for t in got_neg],
                              max_warned=max_warned, checked=[doubted(t) for t in got_valid])  # no threshold yet
    translator.threshold = chosen["threshold"]

    def warned(got: list[Translation | None]) -> float:
        return sum(map(doubted, got)) / len(got)

    kinds = sorted({kind for _, kind in negatives})
    record: dict[str, Any] = {
        **chosen,
        "measure": "mean log-probability per generated token (EOS included), greedy decoding",
        "max_valid_warned": max_warned,
        "n_valid": len(got_valid), "n_negatives": len(got_neg), "seed": seed,
        "negatives": "attnlab.data.held_out_negatives" if runinfo["data"] == "dates"
        else "non-dates of attnlab.data.held_out_negatives and garbled valid sources",
        "refused_negatives": sum(t is None for t in got_neg),
        "negatives_warned_by_kind": {k: sum(_confidence(c) < chosen["threshold"] for c, (_, kk) in
                                            zip(got_neg, negatives, strict=True) if kk == k)
                                     / sum(kk == k for _, kk in negatives) for k in kinds},
        "with_checks": {"valid_warned": warned(got_valid), "negatives_warned": warned(got_neg)},
    }
    path = folder / "bundled.json"
    stored = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    stored[CONFIDENCE_KEY] = record
    atomic_write_text(path, json.dumps(stored, indent=2) + "\n")
    return record


BUNDLE_FILES = ("tokenizer.json", "final.json", "run.json", "train.log", "curves.png")


def bundle_translator(run: str | os.PathLike[str], dest: str | os.PathLike[str], *, dtype: str = "float16"
                      ) -> dict[str, Any]:
    """Copy the best model of the run folder ``run`` into ``dest`` with its weights stored in ``dtype`` (float16,
    bfloat16 or float32), with the run's log, final.json and curves; check that the stored weights translate as
    well: the exact match of the stored model on every test set of final.json goes into ``dest/bundled.json``."""
    import shutil

    from ..models import load_seq2seq, save_seq2seq
    from ._translate_run import exact_match, load_task

    check_dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
    if dtype not in check_dtype:
        raise InputError(f"dtype must be one of {sorted(check_dtype)}, got {dtype!r}")
    src, dest = Path(run), Path(dest)
    model, meta = load_seq2seq(src)
    dest.mkdir(parents=True, exist_ok=True)
    save_seq2seq(dest, model.to(check_dtype[dtype]), meta)
    for name in BUNDLE_FILES:
        if (src / name).is_file():
            shutil.copyfile(src / name, dest / name)
    stored = load_translator(dest)
    final = json.loads((src / "final.json").read_text(encoding="utf-8"))
    runinfo = json.loads(meta["run"])
    splits = load_task(runinfo["data"], runinfo.get("data_options"))
    sets = {"test": splits.test, **splits.extra}
    report: dict[str, Any] = {"dtype": dtype, "sets": {}}
    for name, pairs in sets.items():
        res = exact_match(stored.model, stored.tokenizer, pairs, max_length=int(runinfo["max_length"]))
        report["sets"][name] = {"stored": res["exact_match"], "float32": final["sets"][name]["exact_match"],
                                "n": res["n"]}
    report["bytes"] = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    (dest / "bundled.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report
