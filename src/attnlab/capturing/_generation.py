"""``trace_generation``: continue a prompt with a character language model and capture its attention while it
generates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch
from torch import nn

from ..trace import AttentionTrace
from ._core import capture

__all__ = ["Generating", "trace_generation"]


class Generating(Protocol):
    """What :func:`trace_generation` reads of a language model (``attnlab.training.LanguageModel`` is one): the
    network, its context, the characters of its ids, and a ``generate`` whose result has ``prompt_ids``, ``ids`` and
    ``slid`` (the window slid past the context)."""

    @property
    def model(self) -> nn.Module: ...

    @property
    def context(self) -> int: ...

    @property
    def name(self) -> str: ...

    def characters(self) -> Sequence[str]: ...

    @property
    def generate(self) -> Callable[..., Any]:
        """``generate(prompt, **sampling)``: what was sampled after the prompt."""
        ...


def trace_generation(lm: Generating, prompt: str, **sampling: Any) -> tuple[Any, AttentionTrace]:
    """``(generated, trace)``: the generation of ``lm.generate(prompt, **sampling)`` and the attention captured
    while it ran: the prompt's pass and one step per character, assembled by the trace into one causal matrix per
    layer.  When the window slid past the context, the trace is instead one forward over the last ``context``
    characters (the weights the model gives that window).  Tokens are the characters (``[UNK]`` for unknown)."""
    chars = lm.characters()
    with capture(lm.model) as trace:
        out = lm.generate(prompt, **sampling)
    ids = [*out.prompt_ids, *out.ids]
    if out.slid or len(ids) - 1 > lm.context:
        ids = ids[-lm.context:]
        with torch.no_grad(), capture(lm.model) as trace:
            lm.model(torch.tensor([ids]))
    tokens = [chars[i] for i in ids]
    trace.meta.update(text=prompt, generated="".join(chars[i] for i in out.ids), model=lm.name,
                      replayed=bool(out.slid))
    return out, trace.with_tokens(tokens)
