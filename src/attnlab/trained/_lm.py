"""A trained character language model in use: load it by name or folder (:func:`load_language_model`), generate
text from a prompt one character at a time with its key/value cache (:meth:`LanguageModel.generate`, streamed
through a callback); ``attnlab.capturing.trace_generation`` captures its attention while it does.

Sampling, in this order (as Hugging Face's logits processors): ``[UNK]`` is never drawn; a ``repetition_penalty``
> 1 lowers every character already in the window the model reads (CTRL, Keskar et al. 2019: a positive logit divided
by it, a negative one multiplied; one it sends past the float range stays the least likely, never banned);
``no_repeat_ngram`` n > 0 forbids any character that would repeat an n-gram of the prompt and the text so far (Paulus
et al. 2018); the logits divided by ``temperature`` (any finite number > 0: one so small that the logits over it
overflow is its limit, the likeliest character as ``greedy`` takes it, and one so large that they vanish is the
uniform draw); kept to the ``top_k`` most likely when given; kept to the smallest set whose probability reaches
``top_p`` (nucleus sampling, Holtzman et al. 2020; 1 = off); drawn from a generator seeded with ``seed`` (the
same seed and settings, the same text).  The defaults (:data:`SAMPLING`) sample, and do not loop on the bundled
zh-lm (docs/lm.md); ``greedy=True`` takes the likeliest character each time (after the penalties), as ``top_k=1``
does.  Whatever the settings, a generation whose end repeats one unit back to back is said: :func:`find_loop` sets
``Generated.loop`` and ``generate`` warns.
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
from .._bundled import Located, locate
from ..data import CharTokenizer
from ..errors import AttnLabError, InputError, ModelLoadError
from ..models.lm import CausalLM, load_lm
from ._unknown import unknown_warning

__all__ = ["SAMPLING", "SAMPLING_FILE", "SHOWN_SAMPLING", "Generated", "LanguageModel", "Loop", "check_sampling",
           "find_loop", "load_language_model", "sample_next", "sampling_defaults"]

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
        check_sampling(max_tokens, temperature, top_k, top_p, repetition_penalty, no_repeat_ngram, style="python",
                       seed=seed)
        out = Generated(self.encode_prompt(prompt))
        model, L = self.model.eval(), self.context
        g = torch.Generator().manual_seed(seed)
        seq = list(out.prompt_ids[-L:])
        cache = model.new_cache()
        logits = model(torch.tensor([seq]), cache)[0, -1]  # (V,)
        for step in range(max_tokens):
            nxt, log_p_next = sample_next(logits, seq, [*out.prompt_ids, *out.ids], g, never=0, greedy=greedy,
                                          temperature=temperature, top_k=top_k, top_p=top_p,
                                          repetition_penalty=repetition_penalty, no_repeat_ngram=no_repeat_ngram)
            out.ids.append(nxt)
            out.log_probs.append(log_p_next)
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


def sample_next(logits: torch.Tensor, window: list[int], written: list[int], g: torch.Generator, *,
                never: int | None, greedy: bool, temperature: float, top_k: int, top_p: float,
                repetition_penalty: float, no_repeat_ngram: int) -> tuple[int, float]:
    """One draw after ``logits`` ``(V,)`` as the module's docstring says: ``window`` the ids the model reads (the
    repetition penalty's), ``written`` the prompt and the text so far (the n-gram ban's), ``never`` an id never drawn
    (a character model's ``[UNK]``).  Returns the id and its log-probability after the settings."""
    scores = logits.float().clone()  # (V,)
    if repetition_penalty != 1.0:
        seen = torch.tensor(sorted(set(window)))
        s = scores[seen]
        # a penalty past float32's range is its largest (inf would make 0 * inf NaN), and a logit it sends
        # below the range stays the lowest finite score: penalised characters are never all banned
        r = min(float(repetition_penalty), torch.finfo(scores.dtype).max)
        scores[seen] = torch.where(s > 0, s / r, (s * r).clamp(min=torch.finfo(scores.dtype).min))
    if never is not None:
        scores[never] = -math.inf
    if no_repeat_ngram:
        banned = repeated_ngram_ends(written, no_repeat_ngram)
        if banned and len(banned) < int(torch.isfinite(scores).sum()):  # never ban every character
            scores[torch.tensor(sorted(banned))] = -math.inf
    if greedy:
        nxt = int(scores.argmax())
        log_p = torch.log_softmax(scores, -1)
    else:
        scores = filter_scores(tempered(scores, temperature), top_k, top_p)
        log_p = torch.log_softmax(scores, -1)
        nxt = int(torch.multinomial(log_p.exp(), 1, generator=g))
    return nxt, float(log_p[nxt])


def tempered(scores: torch.Tensor, temperature: float) -> torch.Tensor:
    """``scores / temperature``, or where that leaves no finite largest score (a temperature so small that the
    logits over it overflow, or past float32's range: 0 or inf in it), the same distribution written as
    ``(scores - max) / temperature`` with the temperature in float32's range: the largest score is 0, the others at
    most 0 (``-inf`` when they underflow: the T -> 0 limit, the likeliest character)."""
    out = scores / float(temperature)  # a Python int past int64 is no torch scalar
    if bool(torch.isfinite(out.max())):
        return out
    info = torch.finfo(scores.dtype)
    t = min(max(float(temperature), info.tiny), info.max)
    return (scores - scores.max()) / t


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
        drop = order[1:][before[1:] >= top_p]  # the likeliest is kept even where top_p rounds to 0 in float32
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
                   style: Literal["cli", "json", "python"] = "cli", seed: int = 0) -> None:
    """An InputError for a sampling setting out of range, naming it as ``style`` says it was given.  A number must
    be a finite float (an integer too large for one, NaN and infinity are refused); any temperature > 0 works (one
    so small that the logits over it overflow takes the likeliest character, :func:`tempered`)."""
    n = _NAMED[style]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InputError(f"{n('max_tokens')} must be at least 1, got {_shown(max_tokens)}; e.g. 100")
    t = _real(temperature)
    if t is None or not 0 < t < math.inf:
        raise InputError(f"{n('temperature')} must be a number > 0, got {_shown(temperature)}; 1 samples the model's "
                         f"own distribution, lower is more conservative (e.g. 0.8; near 0 it takes the likeliest "
                         f"character)")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise InputError(f"{n('top_k')} must be 0 (off) or a positive count, got {_shown(top_k)}; e.g. 20")
    p = _real(top_p)
    if p is None or not 0 < p <= 1:
        raise InputError(f"{n('top_p')} must be in (0, 1], got {_shown(top_p)}; e.g. 0.9 (1 = off)")
    r = _real(repetition_penalty)
    if r is None or not 1 <= r < math.inf:
        raise InputError(f"{n('repetition_penalty')} must be a number >= 1, got {_shown(repetition_penalty)}; e.g. "
                         f"1.2 (1 = off)")
    if isinstance(no_repeat_ngram, bool) or not isinstance(no_repeat_ngram, int) or no_repeat_ngram < 0:
        raise InputError(f"{n('no_repeat_ngram')} must be 0 (off) or a length >= 1, got {_shown(no_repeat_ngram)}; "
                         f"e.g. 4")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise InputError(f"{n('seed')} must be an integer from 0 to 2**63 - 1, got {_shown(seed)}; the same seed "
                         f"gives the same text (e.g. 0)")


def _real(value: object) -> float | None:
    """``value`` as a float when it is a number (not a bool) that one can hold, else None (NaN stays NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer past 1.8e308
        return None


def _shown(value: object) -> str:
    """``value`` for a message: its repr, an integer too long to print whole by its length, at most 60 characters."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:  # 4,300 digits cannot print
        return f"an integer of about {math.floor(abs(value).bit_length() * math.log10(2)) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_language_model(model: str | os.PathLike[str] | Located) -> LanguageModel:
    """The language model named ``model`` (``zh-lm``) or in the folder ``attnlab train lm`` wrote; another kind of
    model is refused with the command that reads it."""
    found = model if isinstance(model, Located) else locate(model, "lm")  # (a Located: found already)
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

