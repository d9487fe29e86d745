"""A Hugging Face encoder (a local folder with a ``config.json`` naming a ``model_type``; the bundled MiniLM): it
reads a text (and a ``text_pair``) and answers nothing but its attention and its sentence embedding."""

from __future__ import annotations

from typing import Any

from .._bundled import Located
from ._base import Cost, Forward, Kind, Model, Outcome

__all__ = ["EncoderKind"]


class EncoderKind(Kind):
    name = "huggingface"
    suites_as = "huggingface"
    can = frozenset({"analyze", "explain"})
    options = ("text_pair", "merge", "max_length", "truncate")
    whole = "add --truncate (show) or max_length to keep the first tokens"
    cut = True

    def load(self, found: Located) -> Any:
        from ..capturing.pretrained import load_encoder

        return load_encoder(found, cached=False)  # Model.load keeps it (or a caller's own cache does)

    def config(self, found: Located) -> dict[str, Any] | None:
        from ..capturing import model_config

        return model_config(found)  # (found once: not located again)

    def display_name(self, found: Located, loaded: Any) -> str:
        return str(loaded[2])

    def cost(self, model: Model, text: str, *, trace: bool = True, text_pair: str | None = None,
             max_length: int | None = None, truncate: bool = False, **options: Any) -> Cost:
        from ..capturing import token_limit

        hf_model, tokenizer, _ = model.loaded
        first = (text,) if getattr(hf_model.config, "is_encoder_decoder", False) else (text, text_pair)
        try:
            ids = tokenizer(*first, truncation=False, verbose=False)["input_ids"]
            n = int(ids.shape[-1]) if hasattr(ids, "shape") else len(ids)
            limit = token_limit(hf_model, tokenizer, max_length)
        except Exception:  # a text or an option the tokenizer refuses: the run says why, in one line
            return Cost(len(text))
        n = min(n, limit)  # a longer text is refused by the run (or cut, with truncate)
        config = getattr(hf_model, "config", None)
        layers = int(getattr(config, "num_hidden_layers", 0) or getattr(config, "n_layer", 0) or 1)
        heads = int(getattr(config, "num_attention_heads", 0) or getattr(config, "n_head", 0) or 1)
        return Cost(n, 1, layers * heads * n * n if trace else 0)

    def run(self, model: Model, text: str, *, trace: bool = True, text_pair: str | None = None,
            merge: str | None = None, max_length: int | None = None, truncate: bool = False,
            **options: Any) -> Outcome:
        from ..capturing import encode_loaded

        hf_model, tokenizer, name = model.loaded
        captured, embedding = encode_loaded(text, hf_model, tokenizer, name, text_pair=text_pair, merge=merge,
                                            max_length=max_length, truncate=truncate)
        tokens = list(captured.select(kind=captured.main_kind)[0].key_tokens or [])
        return Outcome(model.name, self.name, text, {"n_tokens": captured.meta["n_tokens"]}, (), tokens,
                       captured if trace else None, embedding)

    def forward(self, model: Model, text: str) -> Forward:
        net, tokenizer, _ = model.loaded  # attnlab's BertEncoder for a plain BERT folder (MiniLM)
        inputs = tokenizer(text, return_tensors="pt", truncation=False)
        return Forward(net, lambda k: net(**{key: v.repeat(k, 1) for key, v in inputs.items()}))

    def sentence_tracer(self, model: Model) -> tuple[int, Any]:
        return 120, lambda text: model.run(text, truncate=True).traced  # cut, with a warning

    def causal_probe(self, model: Model) -> dict[str, Any]:
        net, tokenizer, _ = model.loaded  # attnlab's BertEncoder for a plain BERT folder, else transformers
        starts = [i for i in (tokenizer.bos_token_id, tokenizer.cls_token_id) if i is not None]
        # random ids above the first 1000, where BERT-style vocabularies keep their special and unused tokens
        return {"model": net, "vocab_size": tokenizer.vocab_size, "bos": starts[0] if starts else None,
                "low": min(1000, tokenizer.vocab_size // 2), "forward": lambda m, ids: m(input_ids=ids)}

    def shown_tokens(self, outcome: Outcome) -> list[str]:
        trace = outcome.traced
        return list(trace.select(kind=trace.main_kind)[0].key_tokens or [])

    def observed_vector(self, outcome: Outcome) -> tuple[float, ...]:
        return tuple(float(x) for x in outcome.result) if outcome.result is not None else ()

