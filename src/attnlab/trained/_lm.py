"""A trained character language model in use: load it by name or folder (:func:`load_language_model`), generate
text from a prompt one character at a time with its key/value cache (:meth:`LanguageModel.generate`, streamed
through a callback); ``attnlab.capturing.trace_generation`` captures its attention while it does.

Sampling: the logits of the next character divided by ``temperature`` (> 0), kept to the ``top_k`` most likely
when given, drawn from a generator seeded with ``seed`` (the same seed, the same text); ``[UNK]`` is never drawn.
Past the model's context the window slides: the cache is rebuilt from the last ``context // 2`` characters.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .._bundled import locate
from ..data import CharVocab
from ..errors import InputError
from ..models.lm import CausalLM, load_lm

__all__ = ["Generated", "LanguageModel", "check_sampling", "load_language_model"]


@dataclass
class Generated:
    """A prompt and what the model wrote after it."""

    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)  # the generated ids, in order
    log_probs: list[float] = field(default_factory=list)  # the sampled ids' log-probabilities (after temperature)
    # the same under the model's own distribution (no temperature, top-k or [UNK] masking): what it thinks of the text
    model_log_probs: list[float] = field(default_factory=list)
    slid: bool = False  # the window slid past the context (the trace then replays the last context)

    def tokens(self, vocab: CharVocab) -> list[str]:
        return [vocab.chars[i] for i in [*self.prompt_ids, *self.ids]]


@dataclass
class LanguageModel:
    """A trained :class:`CausalLM` with its character vocabulary."""

    model: CausalLM
    vocab: CharVocab
    meta: dict[str, str]
    name: str = ""

    @property
    def context(self) -> int:
        return self.model.config.context

    def characters(self) -> list[str]:
        """The character of each id (``[UNK]`` for 0)."""
        return self.vocab.chars

    def encode_prompt(self, prompt: str) -> list[int]:
        """The ids of ``prompt``; characters the model never saw become ``[UNK]`` with one warning; an empty prompt
        or one of nothing but unknown characters is refused."""
        if not prompt:
            raise InputError("the prompt is empty; give some text to continue, e.g. \"中国\"")
        unknown = self.vocab.unknown(prompt)
        if len(unknown) == len(set(prompt)):
            raise InputError(f"every character of the prompt {prompt[:40]!r} is unknown to {self.name or 'the model'} "
                             f"(its vocabulary holds {len(self.vocab) - 1} characters of its training text); give a "
                             f"prompt in the language it was trained on")
        if unknown:
            shown = "".join(unknown[:10]) + ("..." if len(unknown) > 10 else "")
            warnings.warn(f"{len(unknown)} character(s) of the prompt are unknown to the model and read as [UNK]: "
                          f"{shown}", UserWarning, stacklevel=2)
        return self.vocab.encode(prompt).tolist()

    @torch.no_grad()
    def generate(self, prompt: str, *, max_tokens: int = 100, temperature: float = 1.0, top_k: int = 0,
                 seed: int = 0, on_text: Callable[[str], None] | None = None) -> Generated:
        """Sample ``max_tokens`` characters after ``prompt``; ``on_text`` gets each one as it comes."""
        check_sampling(max_tokens, temperature, top_k)
        out = Generated(self.encode_prompt(prompt))
        model, L = self.model.eval(), self.context
        g = torch.Generator().manual_seed(seed)
        seq = list(out.prompt_ids[-L:])
        cache = model.new_cache()
        logits = model(torch.tensor([seq]), cache)[0, -1]  # (V,)
        for step in range(max_tokens):
            scores = logits.float() / temperature
            scores[0] = -math.inf  # never [UNK]
            if top_k:
                kth = torch.topk(scores, min(top_k, len(scores) - 1)).values[-1]
                scores = scores.masked_fill(scores < kth, -math.inf)
            log_p = torch.log_softmax(scores, -1)
            nxt = int(torch.multinomial(log_p.exp(), 1, generator=g))
            out.ids.append(nxt)
            out.log_probs.append(float(log_p[nxt]))
            out.model_log_probs.append(float(torch.log_softmax(logits.float(), -1)[nxt]))
            if on_text is not None:
                on_text(self.vocab.chars[nxt])
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
        return out


def check_sampling(max_tokens: int, temperature: float, top_k: int) -> None:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InputError(f"--max-tokens must be at least 1, got {max_tokens!r}; e.g. 100")
    if not isinstance(temperature, (int, float)) or not 0 < temperature < math.inf:
        raise InputError(f"--temperature must be a number > 0, got {temperature!r}; 1 samples the model's own "
                         f"distribution, lower is more conservative (e.g. 0.8)")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise InputError(f"--top-k must be 0 (off) or a positive count, got {top_k!r}; e.g. 20")


def load_language_model(model: str | os.PathLike[str]) -> LanguageModel:
    """The language model named ``model`` (``zh-lm``) or in the folder ``attnlab train lm`` wrote; another kind of
    model is refused with the command that reads it."""
    found = locate(model, "lm")
    net, meta = load_lm(found.path)
    return LanguageModel(net, CharVocab.from_str(meta["tokenizer"]), meta, found.given)

