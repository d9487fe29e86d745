"""A character language model trained by ``attnlab train lm`` (the bundled zh-lm and induction-2l): it continues a
text, sampling under settings of its own (``sampling.json``) or the caller's, and scores how likely it finds one."""

from __future__ import annotations

from typing import Any

import torch

from .._bundled import Located
from ..errors import InputError, TooLongError
from ..viz import one_line
from ._base import Cost, Kind, Model, Outcome
from ._hooked import TextModel

__all__ = ["LM_TEXT", "Continues", "LanguageModelKind", "trace_language_model"]

# what a language model reads when no text is given: a sentence of People's Daily twice, so that its induction heads
# have something to copy (the viewer shows them reading the first copy while they predict the second)
LM_TEXT = "迈向充满希望的新世纪——一九九八年新年讲话。" * 2


class Continues(Kind):
    """What the kinds that continue a text share: the continuation is the answer, its mean log-probability (the
    model's own, per unit) the score, and the lab shows both with the settings and any loop."""

    def answer(self, outcome: Outcome) -> str | None:
        return str(outcome.output["continuation"])

    def score(self, outcome: Outcome) -> float | None:
        return float(outcome.output["log_probability"])

    def told(self, outcome: Outcome) -> str | None:
        return f"continuation: {one_line(str(outcome.output['continuation']))}"  # a line break as its escape

    def shown(self, model: Model, outcome: Outcome, *, settings: dict[str, Any] | None = None, **context: Any
              ) -> dict[str, Any] | None:
        if settings is None:
            return None
        o, loop = outcome.output, outcome.result.loop
        chars = model.loaded.characters()
        return {"continuation": o["continuation"], "log_probability": o["log_probability"], "unit": self.unit,
                "settings": settings,
                "loop": None if loop is None else loop.message(chars, settings["greedy"] or settings["top_k"] == 1)}


class LanguageModelKind(Continues):
    name = "lm"
    suites_as = "lm"
    can = frozenset({"analyze", "sample", "ablate", "patch", "attribute", "qk"})
    options = ("max_tokens", "temperature", "top_k", "top_p", "repetition_penalty", "no_repeat_ngram", "greedy",
               "seed", "on_text")

    def load(self, found: Located) -> Any:
        from ..trained import load_language_model

        lm = load_language_model(found)
        lm.name = found.given
        return lm

    def cost(self, model: Model, text: str, *, trace: bool = True, max_tokens: int | None = None,
             **options: Any) -> Cost:
        from ..trained import SHOWN_SAMPLING

        lm = model.loaded
        writes = SHOWN_SAMPLING["max_tokens"] if max_tokens is None else int(max_tokens)
        n = min(len(text) + writes, lm.context)  # the window slides: a trace keeps at most one context
        config = lm.model.config
        return Cost(len(text), 1, config.n_layers * config.n_heads * n * n if trace else 0)

    def run(self, model: Model, text: str, *, trace: bool = True, **sampling: Any) -> Outcome:
        """The continuation of ``text``: ``sampling`` as ``LanguageModel.generate`` takes it over the model's own
        defaults (``LanguageModel.defaults``), by default the one shown run of every surface
        (``attnlab.trained.SHOWN_SAMPLING``)."""
        from ..capturing import trace_generation
        from ..trained import SHOWN_SAMPLING

        lm = model.loaded
        sampling = {**lm.defaults, **(sampling or SHOWN_SAMPLING)}  # the model's own defaults (sampling.json) beneath
        if trace:
            generated, captured = trace_generation(lm, text, **sampling)
        else:
            generated, captured = lm.generate(text, **sampling), None
        chars = lm.characters()
        scored = generated.model_log_probs
        output = {"continuation": "".join(chars[i] for i in generated.ids),
                  "log_probability": sum(scored) / len(scored) if scored else 0.0, "slid": bool(generated.slid)}
        return Outcome(model.name, self.name, text, output, (), [chars[i] for i in generated.prompt_ids], captured,
                       generated)

    def check_prompt(self, model: Model, text: str, max_tokens: int) -> None:
        model.loaded.encode_prompt(text)  # refuses a prompt of unknown characters

    def check_window(self, model: Model, name: str, text: str, writes: int) -> None:
        limit = model.loaded.context - writes
        if len(text) > limit:
            raise TooLongError(f"the text is {len(text)} characters long but {name} continues at most {limit} "
                               f"(its context of {model.loaded.context} less the {writes} it writes); shorten "
                               f"the text, or continue a longer one with attnlab generate (it slides the window)",
                               len(text), limit)

    def observed(self, model: Model, outcome: Outcome) -> dict[str, float]:
        return {"score": model.loaded.score(outcome.text)}  # how likely the model finds the text itself

    def text_model(self, model: Model) -> Any:
        lm = model.loaded
        vocabulary = tuple(lm.vocab.vocabulary)

        def read(ids: list[int]) -> torch.Tensor:  # the next-character logits (V,) after a text in one context
            if len(ids) > lm.context:
                raise TooLongError(f"the text is {len(ids)} characters long but {model.name} reads at most "
                                   f"{lm.context} at once; shorten the text", len(ids), lm.context)
            return lm.model(torch.tensor([ids]))[0, -1]

        return TextModel(model.found.given, lm.model, lm.vocab, vocabulary, tokens=list, window=lm.context,
                         last=lambda out: out[0, -1], read=read, temperature=1.0, skip=0, top=5,
                         output_noun="next",
                         outputs_said=f"one character it knows ({len(vocabulary) - 1} in its vocabulary)")

    def analysis_text(self, model: Model) -> str | None:
        """:data:`LM_TEXT` for a model that knows most of its characters; else 20 characters of its own vocabulary
        said twice (induction-2l reads no Chinese), so that its induction heads have something to copy."""
        lm = model.loaded
        known = set(lm.vocab.vocabulary[1:])
        if sum(c in known for c in LM_TEXT) >= len(LM_TEXT) / 2:
            return LM_TEXT[:lm.context]
        own = "".join(c for c in lm.vocab.vocabulary[1:] if len(c) == 1 and c.isprintable())[:20]
        return (own * 2)[:lm.context]

    def analysis_trace(self, model: Model, text: str, max_length: int | None = None) -> Any:
        """The attention of the model on ``text`` in one forward pass (at most its context; unknown characters as
        [UNK]), with its characters as tokens."""
        lm = model.loaded
        limit = min(lm.context, max_length or lm.context)
        if len(text) > limit:
            raise InputError(f"the input is {len(text)} characters long but the model takes at most {limit}; shorten "
                             f"the text")
        return trace_language_model(lm, text)

    def sentence_tracer(self, model: Model) -> tuple[int, Any]:
        return model.loaded.context, lambda text: self.analysis_trace(model, text)

    def causal_probe(self, model: Model) -> dict[str, Any]:
        lm = model.loaded  # random characters, [UNK] (id 0) left out
        return {"model": lm.model, "vocab_size": len(lm.vocab), "length": min(20, lm.context // 2), "low": 1}


def trace_language_model(lm: Any, text: str) -> Any:
    """The attention of the language model ``lm`` (:class:`attnlab.trained.LanguageModel`) on ``text`` in one forward
    pass (unknown characters as [UNK]), with its characters as tokens."""
    from ..capturing import capture

    ids = lm.encode_prompt(text)
    with torch.no_grad(), capture(lm.model) as trace:
        lm.model(torch.tensor([ids]))
    return trace.with_tokens([lm.vocab.vocabulary[i] for i in ids])
