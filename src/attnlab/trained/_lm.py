"""A trained character language model in use: load it by name or folder (:func:`load_language_model`), generate
text from a prompt one character at a time with its key/value cache (:meth:`LanguageModel.generate`, streamed
through a callback); ``attnlab.capturing.trace_generation`` captures its attention while it does.

Sampling, in this order (as Hugging Face's logits processors): ``[UNK]`` is never drawn; a ``repetition_penalty``
> 1 lowers every character already in the window the model reads (CTRL, Keskar et al. 2019: a positive logit divided
by it, a negative one multiplied); ``no_repeat_ngram`` n > 0 forbids any character that would repeat an n-gram of the
prompt and the text so far (Paulus et al. 2018); the logits divided by ``temperature`` (> 0); kept to the ``top_k``
most likely when given; kept to the smallest set whose probability reaches ``top_p`` (nucleus sampling, Holtzman et
al. 2020; 1 = off); drawn from a generator seeded with ``seed`` (the same seed and settings, the same text).  The
defaults (:data:`SAMPLING`) sample, and do not loop on the bundled zh-lm (docs/lm.md); ``greedy=True`` takes the
likeliest character each time (after the penalties), as ``top_k=1`` does.  Whatever the settings, a generation whose
end repeats one unit back to back is said: :func:`find_loop` sets ``Generated.loop`` and ``generate`` warns.
Past the model's context the window slides: the cache is rebuilt from the last ``context // 2`` characters.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from .. import _validate as check
from .._bundled import locate
from ..data import CharTokenizer
from ..errors import AttnLabError, InputError, ModelLoadError
from ..models.lm import CausalLM, load_lm
from ._unknown import unknown_warning

__all__ = ["SAMPLING", "SAMPLING_FILE", "SHOWN_SAMPLING", "Generated", "LanguageModel", "Loop", "check_sampling",
           "find_loop", "load_language_model", "sampling_defaults"]

# the defaults of every surface (generate, the lab, the API): sampled, and no loop on zh-lm (docs/lm.md, "Generation")
SAMPLING: dict[str, Any] = {"temperature": 0.8, "top_k": 0, "top_p": 0.9, "repetition_penalty": 1.2,
                            "no_repeat_ngram": 4}
# The one default run of a language model on a text where no sampling is asked for: what `attnlab show`, the lab and
# the Python API (attnlab.Model.run, trace_text) show first, SAMPLING's settings for this many characters.
SHOWN_SAMPLING: dict[str, Any] = {"max_tokens": 20}
# A model's own defaults over SAMPLING, when its folder has this file (JSON, e.g. {"greedy": true,
# "repetition_penalty": 1, "no_repeat_ngram": 0}): the bundled induction-2l copies, which the penalties forbid.
SAMPLING_FILE = "sampling.json"
LOOP_REPEATS = 3  # a unit said this many times back to back at the end of a generation is a loop ...
LOOP_CHARACTERS = 6  # ... when the repeats cover at least this many characters ("哈哈哈" is not one)


@dataclass
class Generated:
    """A prompt and what the model wrote after it."""

    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)  # the generated ids, in order
    log_probs: list[float] = field(default_factory=list)  # the sampled ids' log-probabilities (after temperature)
    # the same under the model's own distribution (no temperature, top-k or [UNK] masking): what it thinks of the text
    model_log_probs: list[float] = field(default_factory=list)
    slid: bool = False  # the window slid past the context (the trace then replays the last context)
    loop: Loop | None = None  # the loop the generation ended in (find_loop), or None

    def tokens(self, vocab: CharTokenizer) -> list[str]:
        return [vocab.vocabulary[i] for i in [*self.prompt_ids, *self.ids]]


@dataclass
class LanguageModel:
    """A trained :class:`CausalLM` with its character vocabulary."""

    model: CausalLM
    vocab: CharTokenizer
    meta: dict[str, str]
    name: str = ""
    # how it writes unless told otherwise: SAMPLING (sampled) with the folder's sampling.json over it
    defaults: dict[str, Any] = field(default_factory=lambda: {**SAMPLING, "greedy": False})

    @property
    def context(self) -> int:
        return self.model.config.context

    def characters(self) -> list[str]:
        """The character of each id (``[UNK]`` for 0)."""
        return list(self.vocab.vocabulary)

    def encode_prompt(self, prompt: str) -> list[int]:
        """The ids of ``prompt``; characters the model never saw become ``[UNK]`` with one warning, and an empty
        prompt or one of nothing but unknown characters is refused (the one rule of every model kind,
        :func:`attnlab.trained.unknown_warning`)."""
        if not prompt:
            raise InputError("the prompt is empty; give some text to continue, e.g. \"中国\"")
        units = self.vocab.units(prompt)
        unknown = unknown_warning([p for p, _ in units], [u for _, u in units], text=prompt,
                                  model=self.name or "the language model")
        if unknown:
            warnings.warn(unknown, UserWarning, stacklevel=2)
        return self.vocab.encode(prompt)

    @torch.no_grad()
    def score(self, text: str) -> float:
        """The mean log-probability (nats) the model gives each character of ``text`` after the first, in the last
        ``context`` characters (0.0 for one character): how likely it finds the text.  Unknown characters warn as in
        :meth:`encode_prompt`."""
        ids = self.encode_prompt(text)[-self.context:]
        if len(ids) < 2:
            return 0.0
        logits = self.model.eval()(torch.tensor([ids]))[0, :-1].float()  # (n-1, V)
        return float(torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:])[:, None]).mean())

    @torch.no_grad()
    def generate(self, prompt: str, *, max_tokens: int = 100, temperature: float = SAMPLING["temperature"],
                 top_k: int = SAMPLING["top_k"], top_p: float = SAMPLING["top_p"],
                 repetition_penalty: float = SAMPLING["repetition_penalty"],
                 no_repeat_ngram: int = SAMPLING["no_repeat_ngram"], greedy: bool = False, seed: int = 0,
                 on_text: Callable[[str], None] | None = None) -> Generated:
        """``max_tokens`` characters after ``prompt``, sampled as the module's docstring says; ``on_text`` gets each
        one as it comes.  A loop at the end (:func:`find_loop`) is kept in ``loop`` and warned about."""
        check_sampling(max_tokens, temperature, top_k, top_p, repetition_penalty, no_repeat_ngram, style="python")
        out = Generated(self.encode_prompt(prompt))
        model, L = self.model.eval(), self.context
        g = torch.Generator().manual_seed(seed)
        seq = list(out.prompt_ids[-L:])
        cache = model.new_cache()
        logits = model(torch.tensor([seq]), cache)[0, -1]  # (V,)
        for step in range(max_tokens):
            scores = logits.float().clone()  # (V,)
            scores[0] = -math.inf  # never [UNK]
            if repetition_penalty != 1.0:
                seen = torch.tensor(sorted(set(seq)))
                s = scores[seen]
                scores[seen] = torch.where(s > 0, s / repetition_penalty, s * repetition_penalty)
            if no_repeat_ngram:
                banned = repeated_ngram_ends([*out.prompt_ids, *out.ids], no_repeat_ngram)
                if banned and len(banned) < int(torch.isfinite(scores).sum()):  # never ban every character
                    scores[torch.tensor(sorted(banned))] = -math.inf
            if greedy:
                nxt = int(scores.argmax())
                log_p = torch.log_softmax(scores, -1)
            else:
                scores = filter_scores(scores / temperature, top_k, top_p)
                log_p = torch.log_softmax(scores, -1)
                nxt = int(torch.multinomial(log_p.exp(), 1, generator=g))
            out.ids.append(nxt)
            out.log_probs.append(float(log_p[nxt]))
            out.model_log_probs.append(float(torch.log_softmax(logits.float(), -1)[nxt]))
            if on_text is not None:
                on_text(self.vocab.vocabulary[nxt])
            seq.append(nxt)
            if step == max_tokens - 1:  # the last character is never read
                break
            if len(seq) > L:  # slide: rebuild the cache from the last half context
                out.slid = True
                seq = seq[-(L // 2):]
                cache = model.new_cache()
                logits = model(torch.tensor([seq]), cache)[0, -1]
            else:
                logits = model(torch.tensor([[nxt]]), cache)[0, -1]
        out.loop = find_loop(out.ids)
        if out.loop is not None:
            warnings.warn(out.loop.message(list(self.vocab.vocabulary), greedy or top_k == 1), UserWarning,
                          stacklevel=2)
        return out


def filter_scores(scores: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """``scores`` ``(V,)`` with every character outside the ``top_k`` likeliest (0 = all) and outside the smallest
    set whose probability reaches ``top_p`` (1 = all; the likeliest is always kept) set to ``-inf``."""
    if top_k:
        kth = torch.topk(scores, min(top_k, len(scores))).values[-1]
        scores = scores.masked_fill(scores < kth, -math.inf)
    if top_p < 1.0:
        order = torch.argsort(scores, descending=True, stable=True)  # (V,)
        probs = torch.softmax(scores[order], -1)
        before = torch.cumsum(probs, -1) - probs  # the probability of the likelier characters
        drop = order[before >= top_p]
        scores = scores.clone()
        scores[drop] = -math.inf
    return scores


def repeated_ngram_ends(ids: list[int], n: int) -> set[int]:
    """The ids that, after ``ids``, would complete an ``n``-gram that ``ids`` already holds."""
    if n < 1 or len(ids) < n:
        return set()
    if n == 1:
        return set(ids)
    prefix = tuple(ids[len(ids) - n + 1:])
    return {ids[i + n - 1] for i in range(len(ids) - n + 1) if tuple(ids[i: i + n - 1]) == prefix}


@dataclass(frozen=True)
class Loop:
    """A unit of characters said back to back at the end of a generation: ``unit`` its ids, ``repeats`` how many
    times (the last may be cut short: 3.5), ``start`` the index in the generated ids where the repetition begins."""

    unit: tuple[int, ...]
    repeats: float
    start: int

    def message(self, chars: list[str], greedy: bool) -> str:
        unit = "".join(chars[i] for i in self.unit)
        why = ("greedy decoding (the likeliest character each time) falls into such loops; sample instead "
               "(--temperature 0.8 --top-p 0.9) or " if greedy else "")
        return (f"the generation loops: {unit!r} repeats {self.repeats:g} times back to back from character "
                f"{self.start + 1}; {why}raise --repetition-penalty (e.g. 1.2) or set --no-repeat-ngram (e.g. 4)")


def find_loop(ids: list[int]) -> Loop | None:
    """The loop at the end of ``ids``: the period ``p`` whose back-to-back repetition (``ids[i] == ids[i + p]``)
    covers the longest end of the text, at least :data:`LOOP_REPEATS` units and :data:`LOOP_CHARACTERS`
    characters; None when there is none."""
    n, best = len(ids), None
    for p in range(1, n // LOOP_REPEATS + 1):
        i = n - p - 1
        while i >= 0 and ids[i] == ids[i + p]:
            i -= 1
        span = n - (i + 1)  # the periodic end: the first unit and its repeats
        if span >= LOOP_REPEATS * p and span >= LOOP_CHARACTERS and (best is None or span > best[1]):
            best = (p, span)
    if best is None:
        return None
    p, span = best
    start = n - span
    return Loop(tuple(ids[start: start + p]), round(span / p, 1), start)


# how a sampling setting is named to whoever gave it: a command's option, a JSON field (the lab's API, sampling.json),
# a Python argument
_NAMED = {"cli": lambda f: "--" + f.replace("_", "-"), "json": lambda f: f'"{f}"', "python": lambda f: f}


def check_sampling(max_tokens: int, temperature: float, top_k: int, top_p: float = 1.0,
                   repetition_penalty: float = 1.0, no_repeat_ngram: int = 0, *,
                   style: Literal["cli", "json", "python"] = "cli") -> None:
    """An InputError for a sampling setting out of range, naming it as ``style`` says it was given."""
    n = _NAMED[style]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InputError(f"{n('max_tokens')} must be at least 1, got {max_tokens!r}; e.g. 100")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 < temperature < math.inf:
        raise InputError(f"{n('temperature')} must be a number > 0, got {temperature!r}; 1 samples the model's own "
                         f"distribution, lower is more conservative (e.g. 0.8)")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise InputError(f"{n('top_k')} must be 0 (off) or a positive count, got {top_k!r}; e.g. 20")
    if isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
        raise InputError(f"{n('top_p')} must be in (0, 1], got {top_p!r}; e.g. 0.9 (1 = off)")
    if (isinstance(repetition_penalty, bool) or not isinstance(repetition_penalty, (int, float))
            or not 1 <= repetition_penalty < math.inf):
        raise InputError(f"{n('repetition_penalty')} must be a number >= 1, got {repetition_penalty!r}; e.g. 1.2 "
                         f"(1 = off)")
    if isinstance(no_repeat_ngram, bool) or not isinstance(no_repeat_ngram, int) or no_repeat_ngram < 0:
        raise InputError(f"{n('no_repeat_ngram')} must be 0 (off) or a length >= 1, got {no_repeat_ngram!r}; "
                         f"e.g. 4")


def load_language_model(model: str | os.PathLike[str]) -> LanguageModel:
    """The language model named ``model`` (``zh-lm``) or in the folder ``attnlab train lm`` wrote; another kind of
    model is refused with the command that reads it."""
    found = locate(model, "lm")
    net, meta = load_lm(found.path)
    return LanguageModel(net, CharTokenizer.from_json(meta["tokenizer"]), meta, found.given,
                         sampling_defaults(found.path))


def sampling_defaults(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """How the model in ``folder`` writes unless told otherwise: :data:`SAMPLING`, not greedy, with the folder's
    :data:`SAMPLING_FILE` over it when there is one (read without loading the model).  A file that is not a JSON
    object of those settings, or whose settings ``generate`` would refuse, is a ModelLoadError naming it."""
    from pathlib import Path

    out: dict[str, Any] = {**SAMPLING, "greedy": False}
    path = Path(folder)
    path = (path if path.is_dir() else path.parent) / SAMPLING_FILE
    if not path.is_file():
        return out
    try:
        given = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelLoadError(f"cannot read {path} ({exc}); it must be a JSON object of sampling settings such as "
                             f'{{"greedy": true}}, or remove it') from None
    if not isinstance(given, dict) or set(given) - set(out):
        shown = sorted(set(given) - set(out)) if isinstance(given, dict) else type(given).__name__
        raise ModelLoadError(f"{path} must be a JSON object with keys among {', '.join(out)}, got {shown}; fix or "
                             f"remove it")
    out.update(given)
    try:
        check.boolean("greedy", out["greedy"], "true = take the likeliest character")
        check_sampling(1, out["temperature"], out["top_k"], out["top_p"], out["repetition_penalty"],
                       out["no_repeat_ngram"], style="json")
    except AttnLabError as exc:
        raise ModelLoadError(f"{path}: {exc}") from None
    return out

