"""A trained translator in use: load it by bundled name or from a run folder, translate with the alignment, and
say when not to believe the output.

Every :class:`Translation` carries its *confidence*: the mean log-probability per generated token (EOS included)
of the chosen output, ``score / length`` (0 is certainty).  :meth:`Translator.translate` warns (a UserWarning,
one line naming the text) when the confidence falls below the threshold stored with the model
(``bundled.json["confidence"]``, chosen on held-out data by :func:`calibrate_translator`), and for a dates
translator also when the output is not a real calendar date or the input is an ambiguous numeric date
(:func:`attnlab.data.calendar_problem`, :func:`attnlab.data.ambiguity`).
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

from .._bundled import locate
from ..data import collate
from ..errors import InputError, ModelLoadError, TooLongError

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


def _config(model: nn.Module) -> Any:
    """The config of a Seq2Seq or TransformerSeq2Seq (``bos_id``, ``pad_id``, ``max_length``)."""
    return model.config
