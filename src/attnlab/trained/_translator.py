"""A trained translator in use: load it by bundled name or from a run folder, translate with the alignment, and
say when not to believe the output.

Every :class:`Translation` carries its *confidence*: the mean log-probability per generated token (EOS included)
of the chosen output, ``score / length`` (0 is certainty).  :meth:`Translator.translate` warns (a UserWarning,
one line naming the text) when the confidence falls below the threshold stored with the model
(``bundled.json["confidence"]``, chosen on held-out data by :func:`calibrate_translator`), and for a dates
translator also when the input names no real date, is no whole date or an ambiguous numeric date, or the output is
not a real calendar date (:func:`attnlab.data.input_problem`, :func:`attnlab.data.parts_problem`,
:func:`attnlab.data.ambiguity`, :func:`attnlab.data.calendar_problem`), the most informative reason first.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._bundled import Located, locate
from ..data import collate
from ..errors import InputError, ModelLoadError, TooLongError
from ._unknown import unknown_warning

__all__ = ["CONFIDENCE_KEY", "Translation", "Translator", "load_translator", "translator_folder"]

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
        return int(_config(self.model).max_length)

    @property
    def run(self) -> dict[str, Any]:
        return dict(json.loads(self.meta.get("run", "{}")))

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Source ids (EOS appended); an empty text, or one of only characters the model never saw
        (:func:`attnlab.trained.unknown_warning`), is an InputError, a too long one a TooLongError naming both
        lengths, and characters the model never saw among known ones are mapped to [UNK] (:meth:`doubts` says
        so)."""
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"the text to translate is empty (got {text!r}); give some text")
            self.unknown(text)  # refuses a text of nothing it knows
            n = len(self.tokenizer.source_tokens(text))  # [EOS] included
            if n > self.max_length:
                raise TooLongError(f"the input is {n} tokens long (with [EOS]) but the model {self.name!r} takes at "
                                   f"most {self.max_length}; shorten the text", n_tokens=n, limit=self.max_length)
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
        pad = int(_config(self.model).pad_id)
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

    def unknown(self, text: str) -> str | None:
        """The warning :func:`attnlab.trained.unknown_warning` gives ``text`` (characters or tokens of the source
        the model never saw), or None; a text of nothing it knows is an InputError."""
        units = self.tokenizer.source_units(text)
        unit = "character" if self.tokenizer.source_kind == "char" else "token"
        return unknown_warning([p for p, _ in units], [u for _, u in units], text=text, model=self.name, unit=unit)

    def doubts(self, text: str, output: str, confidence: float) -> tuple[str, ...]:
        """Why not to believe ``output`` as the translation of ``text`` (one line each, the most informative first;
        empty when none).  For a dates model: the input names no real date (a day its month lacks, a wrong weekday:
        then the input is the problem, not the translation), the input is no whole date (whatever the model writes
        is made up), a numeric input with several readings, a year outside the task's, an output that is not a real
        calendar date; then, for every model, characters of ``text`` it never saw (read as [UNK]) and a confidence below
        :attr:`threshold`."""
        from ..data import ambiguity, calendar_problem, input_problem, parts_problem, year_problem

        out = []
        given = input_problem(text) if self.is_dates else None
        if given is not None:
            out.append(f"{given}; the model wrote {output!r}")
        unknown = self.unknown(text)
        if unknown:
            out.append(unknown)
        if self.is_dates and (reason := parts_problem(text)) is not None:
            out.append(f"{reason} ({output!r})")
        if self.is_dates and (reason := ambiguity(text)) is not None:
            out.append(f"{reason}; the model wrote {output!r}: write the month as a word to choose")
        if self.is_dates and (reason := year_problem(text, output)) is not None:
            out.append(f"{text!r} -> {output!r}: {reason}")
        if self.is_dates and given is None and (reason := calendar_problem(output)) is not None:
            out.append(f"the translation of {text!r} is wrong: {reason}")
        if self.threshold is not None and confidence < self.threshold:
            out.append(f"low confidence for {text!r} -> {output!r}: {confidence:.3f} is below the "
                       f"threshold {self.threshold:.3f} of {self.name!r} (chosen on held-out data); the input is "
                       f"probably unlike what the model was trained on")
        return tuple(out)


def translator_folder(model: str | os.PathLike[str]) -> Path:
    """The model folder of a translator: a bundled name's, a run folder's best model (else its newest checkpoint), or
    a model folder itself; :func:`attnlab.locate` decides, and refuses anything that is not a translator."""
    return locate(model, "translator").path


def load_translator(model: str | os.PathLike[str] | Located) -> Translator:
    """A :class:`Translator` (CPU, eval mode) from a bundled name (``"dates-zh"``, ``"tutorial-en-zh"``), a run
    folder, a checkpoint folder or a model folder (or what :func:`attnlab.locate` found of one)."""
    from ..data import PairTokenizer
    from ..models import load_seq2seq

    folder = model.path if isinstance(model, Located) else translator_folder(model)
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


def _config(model: nn.Module) -> Any:
    """The config of a Seq2Seq or TransformerSeq2Seq (``bos_id``, ``pad_id``, ``max_length``)."""
    return model.config
