"""A Hugging Face causal language model from a local folder (GPT-2, Llama, Qwen2, Mistral; ``save_pretrained``'s
files: a ``config.json``, safetensors weights and the tokenizer's files): it continues a text under the language
models' sampling rules (:data:`attnlab.trained.SAMPLING`, loops said), and every proving tool reads it through
the model's own modules (:mod:`attnlab.circuits`), nothing converted."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from .._bundled import CAUSAL_LMS, Located
from ..errors import InputError, ModelLoadError, TooLongError
from ._base import Cost, Model, Outcome
from ._hooked import TextModel
from .lm import Continues

__all__ = ["HFLanguageModel", "HFLanguageModelKind"]

_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")


@dataclass
class HFLanguageModel:
    """A transformers causal language model with its tokenizer, as this kind holds it."""

    model: Any
    tokenizer: Any
    name: str
    context: int
    defaults: dict[str, Any] = field(default_factory=dict)
    _outputs: tuple[str, ...] | None = None

    def outputs(self) -> tuple[str, ...]:
        """Every id's text, decoded once: the model's outputs as circuits name them."""
        if self._outputs is None:
            self._outputs = tuple(self.pieces(list(range(self.vocab_size))))
        return self._outputs

    def ids(self, text: str) -> list[int]:
        """The ids the model reads for ``text`` (the tokenizer's own special tokens included, as ``tokenizer(text)``
        gives them)."""
        return [int(i) for i in self.tokenizer(text)["input_ids"]]

    def pieces(self, ids: list[int]) -> list[str]:
        """Each id as the text it writes (``' Mary'``, with its space)."""
        return [self.tokenizer.decode([i]) for i in ids]

    def characters(self) -> list[str]:
        """Every id's text, as attribution names the tokens (the name a character model's method has)."""
        return list(self.outputs())

    @property
    def vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])


class _Encoder:
    """What :class:`TextModel` asks of a tokenizer: ids, and each token's piece of the text (none unknown: the
    byte-level and SentencePiece tokenizers of these models read every character)."""

    def __init__(self, lm: HFLanguageModel) -> None:
        self.lm = lm

    def encode(self, text: str) -> list[int]:
        return self.lm.ids(text)

    def units(self, text: str) -> list[tuple[str, bool]]:
        ids = self.lm.ids(text)
        return [(p, False) for p in self.lm.pieces(ids)]


class HFLanguageModelKind(Continues):
    name = "hf-lm"
    suites_as = "lm"
    can = frozenset({"analyze", "sample", "ablate", "patch", "attribute", "qk"})
    unit = "token"
    options = ("max_tokens", "temperature", "top_k", "top_p", "repetition_penalty", "no_repeat_ngram", "greedy",
               "seed", "on_text")

    def load(self, found: Located) -> Any:
        folder = found.path
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        mt = config.get("model_type")
        if not any((folder / w).is_file() for w in _WEIGHTS):
            bin_ = " (a pytorch_model.bin is a pickle, which attnlab never loads)" if (
                folder / "pytorch_model.bin").is_file() else ""
            raise ModelLoadError(f"{found.given!r} holds no safetensors weights{bin_}; save the model with "
                                 f"model.save_pretrained(folder) (safetensors is its default)")
        if not any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer.model", "vocab.json")):
            raise ModelLoadError(f"{found.given!r} holds a {CAUSAL_LMS[mt]} model but no tokenizer; save one beside "
                                 f"it with tokenizer.save_pretrained(folder)")
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        verbosity, bar = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            loaded: Any = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, use_safetensors=True,
                                                               output_loading_info=True)
            net, info = loaded
        except Exception as exc:  # a size mismatch, a broken file: transformers' own words, on one line
            said = " ".join(str(exc).split())[:300]
            raise ModelLoadError(f"cannot load {found.given!r} as a {CAUSAL_LMS[mt]} model offline: "
                                 f"{type(exc).__name__}: {said}") from None
        finally:
            hf_logging.set_verbosity(verbosity)
            if bar:
                hf_logging.enable_progress_bar()
        missing = [k for k in info.get("missing_keys", []) if "rotary_emb" not in k]
        if missing or info.get("mismatched_keys"):
            what = missing or [k for k, *_ in info["mismatched_keys"]]
            raise ModelLoadError(f"the weights in {found.given!r} do not match its config.json: "
                                 f"{len(what)} tensor(s) missing or of another shape ({', '.join(what[:3])}...); "
                                 f"save the model and its config together with save_pretrained")
        from ..trained import sampling_defaults

        context = int(getattr(net.config, "n_positions", None) or net.config.max_position_embeddings)
        # how it writes unless told: the language models' defaults, a sampling.json of the folder over them (as
        # attnlab's own language models, and as the lab's controls start)
        return HFLanguageModel(net.eval(), tokenizer, found.given, context, sampling_defaults(folder))

    def config(self, found: Located) -> dict[str, Any] | None:
        return dict(json.loads((found.path / "config.json").read_text(encoding="utf-8")))

    def _prompt(self, lm: HFLanguageModel, text: str) -> list[int]:
        if not text.strip():
            raise InputError("the prompt is empty; give some text to continue")
        return lm.ids(text)

    def check_prompt(self, model: Model, text: str, max_tokens: int) -> None:
        self._checked(model, text, max_tokens)

    def check_window(self, model: Model, name: str, text: str, writes: int) -> None:
        self._checked(model, text, writes, name)

    def _checked(self, model: Model, text: str, max_tokens: int, name: str | None = None) -> list[int]:
        lm: HFLanguageModel = model.loaded
        prompt = self._prompt(lm, text)
        if len(prompt) + max_tokens > lm.context:
            raise TooLongError(f"the text is {len(prompt)} tokens and {max_tokens} more are asked for, but "
                               f"{name or model.name} reads at most {lm.context}; shorten the text or ask for fewer "
                               f"tokens", len(prompt) + max_tokens, lm.context)
        return prompt

    def cost(self, model: Model, text: str, *, trace: bool = True, max_tokens: int | None = None,
             **options: Any) -> Cost:
        from ..trained import SHOWN_SAMPLING

        lm: HFLanguageModel = model.loaded
        try:
            n = len(lm.ids(text))
        except Exception:  # a text the tokenizer refuses: the run says why
            return Cost(len(text))
        n += SHOWN_SAMPLING["max_tokens"] if max_tokens is None else int(max_tokens)
        config = lm.model.config
        layers = int(getattr(config, "n_layer", None) or config.num_hidden_layers)
        heads = int(getattr(config, "n_head", None) or config.num_attention_heads)
        n = min(n, lm.context)
        return Cost(n, 1, layers * heads * n * n if trace else 0)

    def run(self, model: Model, text: str, *, trace: bool = True, **sampling: Any) -> Outcome:
        """The continuation of ``text``, sampled as :func:`attnlab.trained.sample_next` draws (the language models'
        defaults, :data:`attnlab.trained.SAMPLING`, or the caller's), the prompt and its continuation within the
        model's context; the attention of the whole text in one pass when ``trace``."""
        from ..trained import SHOWN_SAMPLING, Generated, check_sampling, find_loop, sample_next

        lm: HFLanguageModel = model.loaded
        s = {**lm.defaults, "max_tokens": 100, "seed": 0, **(sampling or SHOWN_SAMPLING)}
        on_text = s.pop("on_text", None)
        check_sampling(s["max_tokens"], s["temperature"], s["top_k"], s["top_p"], s["repetition_penalty"],
                       s["no_repeat_ngram"], style="python", seed=s["seed"])
        prompt = self._checked(model, text, s["max_tokens"])
        out = Generated(prompt)
        g = torch.Generator().manual_seed(int(s["seed"]))
        net = lm.model
        with torch.no_grad():
            step = net(input_ids=torch.tensor([prompt]), use_cache=True)
            for i in range(s["max_tokens"]):
                logits = step.logits[0, -1]
                read = [*prompt, *out.ids]  # what the model read (its window: it does not slide) and wrote so far
                nxt, log_p = sample_next(logits, read, read, g, never=None,
                                         greedy=bool(s["greedy"]), temperature=s["temperature"], top_k=s["top_k"],
                                         top_p=s["top_p"], repetition_penalty=s["repetition_penalty"],
                                         no_repeat_ngram=s["no_repeat_ngram"])
                out.ids.append(nxt)
                out.log_probs.append(log_p)
                out.model_log_probs.append(float(torch.log_softmax(logits.float(), -1)[nxt]))
                if on_text is not None:
                    on_text(lm.tokenizer.decode([nxt]))
                if i < s["max_tokens"] - 1:
                    step = net(input_ids=torch.tensor([[nxt]]), use_cache=True, **_cache_of(step))
        out.loop = find_loop(out.ids)
        said: tuple[str, ...] = ()
        if out.loop is not None:
            said = (out.loop.message(list(lm.outputs()), bool(s["greedy"]) or s["top_k"] == 1),)
            warnings.warn(said[0], UserWarning, stacklevel=2)
        captured = self._trace(lm, [*prompt, *out.ids[:-1]]) if trace else None
        scored = out.model_log_probs
        output = {"continuation": lm.tokenizer.decode(out.ids), "log_probability": sum(scored) / len(scored),
                  "slid": False}
        return Outcome(model.name, self.name, text, output, said, lm.pieces(prompt), captured, out)

    def _trace(self, lm: HFLanguageModel, ids: list[int]) -> Any:
        from ..capturing import capture

        with torch.no_grad(), capture(lm.model) as trace:
            lm.model(input_ids=torch.tensor([ids]), use_cache=False)
        return trace.with_tokens(lm.pieces(ids))

    def text_model(self, model: Model) -> TextModel:
        lm: HFLanguageModel = model.loaded
        net = lm.model

        def read(ids: list[int]) -> torch.Tensor:  # the next-token logits (V,) after a text in one pass
            if len(ids) > lm.context:
                raise TooLongError(f"the text is {len(ids)} tokens long but {model.name} reads at most {lm.context} "
                                   f"at once; shorten the text", len(ids), lm.context)
            return net(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]

        return TextModel(model.found.given, net, _Encoder(lm), lm.outputs(), tokens=lambda t: lm.pieces(lm.ids(t)),
                         window=lm.context, last=_last, read=read, skip=None, top=5,
                         output_noun="next",
                         outputs_said="a text that is one token of its tokenizer (with its leading space, e.g. "
                                      "' Mary'); a text it splits into several cannot be one output")

    def analysis_text(self, model: Model) -> str | None:
        return "When Mary and John went to the store, John gave a drink to"

    def analysis_trace(self, model: Model, text: str, max_length: int | None = None) -> Any:
        lm: HFLanguageModel = model.loaded
        ids = self._prompt(lm, text)
        limit = min(lm.context, max_length or lm.context)
        if len(ids) > limit:
            raise InputError(f"the input is {len(ids)} tokens long but the model takes at most {limit}; shorten the "
                             f"text")
        return self._trace(lm, ids)

    def sentence_tracer(self, model: Model) -> tuple[int, Any]:
        return model.loaded.context, lambda text: self.analysis_trace(model, text)

    def causal_probe(self, model: Model) -> dict[str, Any]:
        lm: HFLanguageModel = model.loaded
        bos = lm.tokenizer.bos_token_id
        return {"model": lm.model, "vocab_size": lm.vocab_size, "length": min(20, lm.context // 2),
                "bos": bos if bos is not None and lm.ids("a")[:1] == [bos] else None, "low": 0,
                "forward": lambda m, ids: m(input_ids=ids, use_cache=False)}


def _last(out: Any) -> torch.Tensor:
    """The next-token logits ``(V,)`` of the first row's last position: of the logits circuits' runs give, or of the
    model's own output object."""
    logits = getattr(out, "logits", out)
    return logits[0, -1]


def _cache_of(output: Any) -> dict[str, Any]:
    """The key/value cache of a forward's output, as the next call takes it: ``cache`` (transformers 5.2x), or
    ``past_key_values`` (the floor's transformers, before the rename)."""
    if getattr(output, "cache", None) is not None:
        return {"cache": output.cache}
    return {"past_key_values": output.past_key_values}
