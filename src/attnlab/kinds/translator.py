"""A translator trained by ``attnlab train translate`` (the bundled dates-zh and tutorial-en-zh): it reads a source
text of at most its ``max_length`` tokens and answers a translation with its confidence and alignment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._bundled import Located
from ..errors import InputError
from ._base import Cost, Kind, Model, Outcome, nonempty

__all__ = ["TranslatorKind"]

BATCH = 256  # texts a translator decodes at once


class TranslatorKind(Kind):
    name = "translator"
    suites_as = "translator"
    can = frozenset({"attribute", "batch", "heads"})
    options = ("beam",)

    def load(self, found: Located) -> Any:
        from ..trained import load_translator

        translator = load_translator(found)  # found once: not located again
        translator.name = found.given
        return translator

    def check_beam(self, model: Model, beam: object) -> int:
        """``beam``, refused outside 1 .. the size of the target vocabulary (more hypotheses than the tokens each
        step can choose from keep nothing more and cost time and memory)."""
        most = int(model.loaded.tokenizer.target_vocab_size)
        if isinstance(beam, bool) or not isinstance(beam, int) or not 1 <= beam <= most:
            raise InputError(f"the beam must be an integer from 1 (greedy) to {most} (the size of {model.name}'s "
                             f"target vocabulary), got {beam!r}; 4 is a usual beam")
        return beam

    def cost(self, model: Model, text: str, *, trace: bool = True, beam: int = 1, **options: Any) -> Cost:
        translator = model.loaded
        n = len(translator.tokenizer.source_tokens(text))
        t = translator.max_length
        # at most: encoder self-attention (n x n), cross (t x n) and decoder self (t x t), each head of each layer
        return Cost(n, 1, (n * n + t * n + t * t) * _heads(translator.model) if trace else 0)

    def run(self, model: Model, text: str, *, trace: bool = True, beam: int = 1, **options: Any) -> Outcome:
        from ..capturing import trace_translation

        beam = self.check_beam(model, beam)
        translator = model.loaded
        nonempty(text, "to translate")
        if trace:
            translation, captured = trace_translation(translator, text, beam)
        else:
            (translation,) = translator.translate([text], beam=beam)
            captured = None
        return Outcome(model.name, self.name, text, _translated(translation), tuple(translation.warnings),
                       list(translation.source_tokens), captured, translation)

    def run_many(self, model: Model, texts: Sequence[str], *, beam: int = 1, **options: Any) -> list[Outcome]:
        beam = self.check_beam(model, beam)
        out = []
        for start in range(0, len(texts), BATCH):
            for t in model.loaded.translate(texts[start:start + BATCH], beam=beam, warn=False):
                out.append(Outcome(model.name, self.name, t.source, _translated(t), tuple(t.warnings),
                                   list(t.source_tokens), None, t))
        return out

    def answer(self, outcome: Outcome) -> str | None:
        return str(outcome.output["translation"])

    def score(self, outcome: Outcome) -> float | None:
        return float(outcome.output["confidence"])

    def told(self, outcome: Outcome) -> str | None:
        return f"translation: {outcome.output['translation']}"

    def shown(self, model: Model, outcome: Outcome, **context: Any) -> dict[str, Any] | None:
        o = outcome.output
        return {"translation": o["translation"], "confidence": o["confidence"], "doubts": list(outcome.warnings),
                "source_tokens": o["source_tokens"], "target_tokens": o["target_tokens"],
                "alignment": [[round(float(x), 5) for x in row] for row in o["alignment"]]}  # (T, S)


def _heads(model: Any) -> int:
    """Every head of every attention layer of ``model`` (an upper bound for each of the three attentions)."""
    from ..layers import MultiHeadAttention

    return max(1, sum(int(getattr(m, "n_heads", 1)) for m in model.modules() if isinstance(m, MultiHeadAttention)))


def _translated(translation: Any) -> dict[str, Any]:
    return {"translation": translation.text, "confidence": float(translation.confidence),
            "source_tokens": list(translation.source_tokens), "target_tokens": list(translation.target_tokens),
            "alignment": translation.alignment.tolist()}  # (T, S)
