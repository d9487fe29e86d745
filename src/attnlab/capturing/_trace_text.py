"""A Hugging Face encoder's attention on a text, offline, with readable tokens: what :func:`attnlab.trace_text`
(in :mod:`attnlab.kinds`, which runs any model by name) runs for an encoder, or for a Hugging Face model already
loaded (:func:`trace_module`); :mod:`attnlab.capturing.pretrained` loads it.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from ..errors import InputError, ModelLoadError, TooLongError
from ..trace import AttentionTrace
from ._core import capture
from .tokens import attach_tokens, detect_style, merge_words, readable_tokens

__all__ = ["UnknownTokensWarning", "check_text", "encode_loaded", "token_limit", "trace_loaded", "trace_module"]


def check_text(label: str, text: object) -> str:
    if not isinstance(text, str):
        raise InputError(f"{label} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InputError(f"{label} is empty; give some text to run the model on")
    return text


def token_limit(hf_model: Any, tokenizer: Any, max_length: int | None) -> int:
    """The most tokens the model takes: the smaller of its positions and its tokenizer's limit."""
    limits = [
        v for v in (getattr(hf_model.config, "max_position_embeddings", None), tokenizer.model_max_length)
        if isinstance(v, int) and 0 < v < 1_000_000
    ]
    model_max = min(limits) if limits else None
    if max_length is None:
        return model_max if model_max is not None else 1_000_000
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
        raise InputError(f"max_length must be an integer >= 2, got {max_length!r}")
    if model_max is not None and max_length > model_max:
        raise InputError(f"max_length={max_length} is more than the model takes ({model_max} tokens); "
                         f"pass max_length <= {model_max}")
    return max_length


def trace_module(text: str, model: nn.Module, tokenizer: Any, *, text_pair: str | None = None,
                 merge: str | None = None, max_length: int | None = None, truncate: bool = False) -> AttentionTrace:
    """:func:`attnlab.trace_text` on a Hugging Face model already loaded, with its ``tokenizer`` (both checked)."""
    hf_model, tokenizer, name = _model_and_tokenizer(model, tokenizer)
    return trace_loaded(text, hf_model, tokenizer, name, text_pair=text_pair, merge=merge, max_length=max_length,
                        truncate=truncate)


def trace_loaded(text: str, hf_model: Any, tokenizer: Any, name: str, *, text_pair: str | None = None,
                 merge: str | None = None, max_length: int | None = None, truncate: bool = False) -> AttentionTrace:
    """:func:`trace_text` on a loaded Hugging Face model (or attnlab's own BERT encoder) and its tokenizer."""
    return encode_loaded(text, hf_model, tokenizer, name, text_pair=text_pair, merge=merge, max_length=max_length,
                         truncate=truncate)[0]


def encode_loaded(text: str, hf_model: Any, tokenizer: Any, name: str, *, text_pair: str | None = None,
                  merge: str | None = None, max_length: int | None = None,
                  truncate: bool = False) -> tuple[AttentionTrace, torch.Tensor | None]:
    """``(trace, embedding)``: :func:`trace_loaded`, and the text's embedding from the same forward pass, the mean of
    the last hidden states over its tokens, unit length (what sentence-transformers' all-MiniLM-L6-v2 returns; None
    for a model whose output has no hidden states, or an encoder-decoder)."""
    check_text("text", text)
    if text_pair is not None:
        check_text("text_pair", text_pair)
    if merge not in (None, "words"):
        raise InputError(f"merge must be None or 'words', got {merge!r}")
    limit = token_limit(hf_model, tokenizer, max_length)
    enc_dec = bool(getattr(hf_model.config, "is_encoder_decoder", False))
    first = (text,) if enc_dec else (text, text_pair)
    inputs = tokenizer(*first, return_tensors="pt", truncation=False, verbose=False)
    n = int(inputs["input_ids"].shape[1])
    if n > limit:
        if not truncate:
            raise TooLongError(
                f"the input is {n} tokens long (special tokens included) but at most {limit} are taken; shorten "
                f"the text, or pass truncate=True (attnlab show --truncate) to keep the first {limit} tokens",
                n,
                limit,
            )
        warnings.warn(f"the input is {n} tokens long; truncated to the first {limit} tokens", stacklevel=2)
        inputs = tokenizer(*first, return_tensors="pt", truncation=True, max_length=limit)
    model_inputs = dict(inputs)
    target = None
    if enc_dec:
        model_inputs["decoder_input_ids"] = _decoder_ids(hf_model, tokenizer, text_pair or text, limit)
        target = tokenizer.convert_ids_to_tokens(model_inputs["decoder_input_ids"][0].tolist())
    _warn_unknown(first, tokenizer, name)
    device = next(iter(hf_model.parameters()), torch.empty(0)).device
    with torch.no_grad(), _eval_mode(hf_model), capture(hf_model) as trace:
        out = hf_model(**{k: v.to(device) for k, v in model_inputs.items()})
    hidden = out if isinstance(out, torch.Tensor) else getattr(out, "last_hidden_state", None)  # (1, n, M)
    embedding = None
    if hidden is not None and not enc_dec:
        keep = inputs["attention_mask"].to(hidden.device)[..., None].to(hidden.dtype)  # (1, n, 1)
        mean = (hidden * keep).sum(1)[0] / keep.sum()  # (M,)
        embedding = (mean / mean.norm().clamp(min=1e-12)).float().cpu()
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
    style = _style(tokenizer)
    special = list(tokenizer.all_special_tokens)
    trace = attach_tokens(trace, tokens, target)
    if merge == "words":
        trace = merge_words(trace, style, special)
    for r in trace.records:
        assert r.query_tokens is not None and r.key_tokens is not None
        r.query_tokens = readable_tokens(r.query_tokens, style, special, mark_word_starts=merge is None)
        r.key_tokens = readable_tokens(r.key_tokens, style, special, mark_word_starts=merge is None)
    trace.meta = {
        "model": name, "text": text, "text_pair": text_pair, "n_layers": trace.n_layers, "n_heads": trace.n_heads,
        "n_tokens": int(inputs["input_ids"].shape[1]), "merge": merge,
    }
    return trace, embedding


def _model_and_tokenizer(model: Any, tokenizer: Any) -> tuple[Any, Any, str]:
    """``(hf_model, tokenizer, name)`` for a loaded model with its tokenizer."""
    if not hasattr(model, "config"):
        raise InputError(
            f"model= is a {type(model).__name__}, not a Hugging Face transformers model (it has no .config); "
            f"trace_text runs transformers models: for any other module use attnlab.capture(model)"
        )
    if tokenizer is None or not callable(tokenizer) or not hasattr(tokenizer, "convert_ids_to_tokens"):
        got = "none" if tokenizer is None else f"a {type(tokenizer).__name__}"
        raise InputError(
            f"model= is a loaded {type(model).__name__}, so trace_text needs its tokenizer, got {got}; pass "
            f"tokenizer=AutoTokenizer.from_pretrained(<the model's folder>)"
        )
    name = str(getattr(model.config, "name_or_path", "") or type(model).__name__)
    return model, tokenizer, name


@contextlib.contextmanager
def _eval_mode(model: nn.Module) -> Iterator[None]:
    """Run ``model`` in eval mode (no dropout on the weights) and put its mode back afterwards."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def _warn_unknown(texts: tuple[str | None, ...], tokenizer: Any, name: str) -> None:
    """Warn when the model's vocabulary lacks some of the text's tokens (MiniLM maps most Chinese characters to
    [UNK]), and refuse a text of nothing but unknown tokens: the one rule of every model kind
    (:func:`attnlab.trained.unknown_warning`)."""
    from ..trained import unknown_warning

    unk = tokenizer.unk_token_id
    special = set(tokenizer.all_special_ids) - {unk}
    pieces: list[str] = []
    flags: list[bool] = []
    for text in (t for t in texts if t):
        try:
            enc = tokenizer(text, return_tensors="pt", return_offsets_mapping=True)
            spans = [tuple(o) for o in enc["offset_mapping"][0].tolist()]
        except (NotImplementedError, TypeError, KeyError):  # a slow transformers tokenizer: no offsets
            enc = tokenizer(text, return_tensors="pt")
            spans = []
        ids = enc["input_ids"][0].tolist()
        tokens = tokenizer.convert_ids_to_tokens(ids)
        for k, i in enumerate(ids):
            if i not in special:
                pieces.append(text[spans[k][0]:spans[k][1]] if spans else tokens[k])
                flags.append(unk is not None and i == unk)
    said = unknown_warning(pieces, flags, text=" / ".join(t for t in texts if t), model=name, unit="token")
    if said:
        hint = (" (a model whose vocabulary covers this script reads it: model=<a local Hugging Face folder>, e.g. a "
                "Chinese BERT for Chinese)")
        warnings.warn(said + hint, UnknownTokensWarning, stacklevel=3)


class UnknownTokensWarning(UserWarning):
    """Some of a text's tokens are unknown to the model (:func:`attnlab.trained.unknown_warning`)."""


def _decoder_ids(hf_model: Any, tokenizer: Any, target: str, limit: int) -> torch.Tensor:
    """The decoder's input for an encoder-decoder model: the start token, then the target text shifted right."""
    ids = tokenizer(text_target=target, truncation=True, max_length=limit, return_tensors="pt")["input_ids"]
    start = hf_model.config.decoder_start_token_id
    if start is None:
        raise ModelLoadError("the encoder-decoder model's config has no decoder_start_token_id; set it in config.json")
    return torch.cat([torch.full((1, 1), int(start)), ids[:, :-1]], dim=1)  # (1, T)


# The word-mark style of each tokenizer seen, read once: scanning a 30,000-entry vocabulary takes about 0.1 s, more
# than running MiniLM on a sentence (`attnlab serve` runs the same tokenizer on text after text).
_STYLES: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()


def _style(tokenizer: Any) -> str | None:
    """The word-mark style of a tokenizer, read from its vocabulary (once per tokenizer)."""
    try:
        return _STYLES[tokenizer]
    except KeyError:
        style = _STYLES[tokenizer] = detect_style(tokenizer.get_vocab())
        return style
    except TypeError:  # a tokenizer that cannot be weakly referenced: read it every time
        return detect_style(tokenizer.get_vocab())
