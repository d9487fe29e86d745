"""Using a trained translator: load it by bundled name or from a run folder, translate with the alignment, and say
when not to believe the output.

Every :class:`Translation` carries its *confidence*: the mean log-probability per generated token (EOS included)
of the chosen output, ``score / length`` (0 is certainty).  :meth:`Translator.translate` warns (a UserWarning,
one line naming the text) when the confidence falls below the threshold stored with the model
(``bundled.json["confidence"]``, chosen on held-out data by :func:`calibrate_translator`), and for a dates
translator also when the output is not a real calendar date or the input is an ambiguous numeric date
(:func:`attnlab.data.calendar_problem`, :func:`attnlab.data.ambiguity`).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._bundled import locate
from .._io import atomic_write_text
from ..data import PairSplits, collate
from ..errors import InputError, ModelLoadError, TooLongError
from ._translate_run import model_config

__all__ = ["Translation", "Translator", "bundle_translator", "calibrate_translator", "choose_threshold",
           "load_translator", "translator_folder"]

CONFIDENCE_KEY = "confidence"  # bundled.json's record of the threshold and the rates measured choosing it


@dataclass(frozen=True)
class Translation:
    """One translated text: the output, its tokens on both sides and the alignment ``(T, S)`` between them."""

    source: str
    text: str
    source_tokens: list[str]  # S labels: the source's tokens and [EOS]
    target_tokens: list[str]  # T labels: the generated tokens (no BOS, no EOS)
    alignment: torch.Tensor  # (T, S) float32: row i is where the model looked while generating token i
    score: float
    ids: list[int]  # the T generated target ids (no BOS, no EOS)
    confidence: float  # score / tokens scored (EOS included): the mean log-probability per token
    warnings: tuple[str, ...] = ()  # why not to believe it (low confidence, no such date, an ambiguous input)


@dataclass
class Translator:
    """A trained translator with its tokenizer; :meth:`translate` runs it."""

    model: nn.Module
    tokenizer: Any
    meta: dict[str, str]
    name: str
    threshold: float | None = None  # warn below this confidence (None: no threshold was chosen for this model)

    @property
    def max_length(self) -> int:
        return int(model_config(self.model).max_length)

    @property
    def run(self) -> dict[str, Any]:
        return dict(json.loads(self.meta.get("run", "{}")))

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Source ids (EOS appended); an empty text is an InputError, a too long one a TooLongError naming both
        lengths, and characters the model never saw are mapped to [UNK] with a warning."""
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"the text to translate is empty (got {text!r}); give some text")
            n = len(self.tokenizer.source_tokens(text))  # [EOS] included
            if n > self.max_length:
                raise TooLongError(f"the input is {n} tokens long (with [EOS]) but the model {self.name!r} takes at "
                                   f"most {self.max_length}; shorten the text", n_tokens=n, limit=self.max_length)
            unknown = list(dict.fromkeys(self.tokenizer.unknown_source(text)))
            if unknown:
                shown = "".join(unknown[:20]) if all(len(u) == 1 for u in unknown) else " ".join(unknown[:20])
                warnings.warn(f"{len(unknown)} character(s) or token(s) the model {self.name!r} never saw in "
                              f"training ({shown!r}) are read as [UNK]; the translation may be wrong", UserWarning,
                              stacklevel=2)
        return [list(ids) for ids in self.tokenizer.encode_source(list(texts), self.max_length)]

    @property
    def is_dates(self) -> bool:
        """Whether the model was trained on the dates task (its outputs can be checked against the calendar)."""
        return self.run.get("data") == "dates"

    @torch.no_grad()
    def translate(self, texts: Sequence[str], *, beam: int = 1, warn: bool = True) -> list[Translation]:
        """Translate ``texts`` (greedy, or beam search with ``beam`` hypotheses), one batch; each translation's
        reasons for doubt (:meth:`doubts`) are also issued as one UserWarning per text unless ``warn`` is False."""
        ids = self.encode(texts)
        self.model.eval()
        pad = int(model_config(self.model).pad_id)
        gen = self.model.generate(collate(ids, torch.device("cpu"), pad), beam=beam)  # type: ignore[operator]
        out = []
        for i, text in enumerate(texts):
            tokens = list(gen.tokens[i])
            weights = gen.alignment[i].detach().float().cpu()  # (T, S_i)
            src = self.tokenizer.source_tokens(text)  # [EOS] last
            output, confidence = self.tokenizer.decode_target(tokens), gen.confidences[i]
            doubts = self.doubts(text, output, confidence)
            out.append(Translation(text, output, src[: weights.shape[1]],
                                   list(self.tokenizer.target_tokens(tokens))[: weights.shape[0]], weights,
                                   float(gen.scores[i]), tokens, confidence, doubts))
            if doubts and warn:  # one line per text, every reason in it
                warnings.warn("; ".join(doubts), UserWarning, stacklevel=2)
        return out

    def doubts(self, text: str, output: str, confidence: float) -> tuple[str, ...]:
        """Why not to believe ``output`` as the translation of ``text`` (one line each; empty when none): a
        confidence below :attr:`threshold`, and for a dates model an output that is not a real calendar date, a
        numeric input with several readings, a year outside the task's, or an input that is no whole date."""
        from ..data import ambiguity, calendar_problem, parts_problem, year_problem

        out = []
        if self.is_dates and (reason := ambiguity(text)) is not None:
            out.append(f"{reason}; the model wrote {output!r}: write the month as a word to choose")
        if self.is_dates and (reason := calendar_problem(output)) is not None:
            out.append(f"the translation of {text!r} is wrong: {reason}")
        if self.is_dates and (reason := year_problem(text, output)) is not None:
            out.append(f"{text!r} -> {output!r}: {reason}")
        if self.is_dates and (reason := parts_problem(text)) is not None:
            out.append(f"{reason} ({output!r})")
        if self.threshold is not None and confidence < self.threshold:
            out.append(f"low confidence for {text!r} -> {output!r}: {confidence:.3f} is below the "
                       f"threshold {self.threshold:.3f} of {self.name!r} (chosen on held-out data); the input is "
                       f"probably unlike what the model was trained on")
        return tuple(out)


def translator_folder(model: str | os.PathLike[str]) -> Path:
    """The model folder of a translator: a bundled name's, a run folder's best model (else its newest checkpoint), or
    a model folder itself; :func:`attnlab.locate` decides, and refuses anything that is not a translator."""
    return locate(model, "translator").path


def load_translator(model: str | os.PathLike[str]) -> Translator:
    """A :class:`Translator` (CPU, eval mode) from a bundled name (``"dates-zh"``, ``"tutorial-en-zh"``), a run
    folder, a checkpoint folder or a model folder."""
    from ..data import PairTokenizer
    from ..models import load_seq2seq

    folder = translator_folder(model)
    net, meta = load_seq2seq(folder)
    try:
        tokenizer = PairTokenizer.from_json(meta["tokenizer"])
    except (KeyError, ValueError) as exc:
        raise ModelLoadError(f"the model at {str(folder)!r} lacks its tokenizer ({exc}); train it again") from None
    net = net.float().eval()
    return Translator(net, tokenizer, meta, str(model), _stored_threshold(folder))


def _stored_threshold(folder: Path) -> float | None:
    """The confidence threshold stored in ``folder/bundled.json`` by :func:`calibrate_translator`, if any."""
    path = folder / "bundled.json"
    if not path.is_file():
        return None
    try:
        return float(json.loads(path.read_text(encoding="utf-8"))[CONFIDENCE_KEY]["threshold"])
    except KeyError:
        return None
    except (ValueError, TypeError) as exc:
        raise ModelLoadError(f"{str(path)!r} has no readable confidence threshold ({exc}); run "
                             f"attnlab.training.calibrate_translator on the model again") from None


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
    None for a text the translator refuses (too long), which the command refuses too."""
    limit = translator.max_length
    kept = [t for t in texts if len(translator.tokenizer.source_tokens(t)) <= limit]
    done: dict[str, Translation] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, len(kept), size):
            done.update((t.source, t) for t in translator.translate(kept[start:start + size], warn=False))
    return [done.get(t) for t in texts]


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
