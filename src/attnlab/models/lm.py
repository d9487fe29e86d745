"""A causal language model over characters: embeddings, pre-norm decoder blocks (causal self-attention with rotary
positions, any kernel, a key/value cache) and a softmax over the vocabulary whose weights are the embeddings'
(tied, Press & Wolf 2017).  Like nanoGPT's GPT, without learned positions: rotary ones are relative, so a cached
decoding step continues at the right position.

On disk (:func:`save_lm`, :func:`load_lm`): a folder with ``model.safetensors`` and ``config.json``
``{"format": "attnlab.lm/1", "config": {...}, "meta": {...}}`` (the tokenizer's JSON is one of the meta strings);
written atomically, weights first, so a folder with a ``config.json`` holds a complete model.

Letters: B batch, L length (new tokens), S cached + new positions, M d_model, V vocabulary.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import _validate as check
from .._io import atomic_write_bytes, atomic_write_text, safetensors_bytes
from ..errors import ConfigError, ModelLoadError, ShapeError
from ..layers import AttentionCall, FeedForward, KVCache, MultiHeadAttention, TransformerConfig
from ..layers.feedforward import residual
from ._configs import LMConfig

__all__ = ["LM_FORMAT", "CausalLM", "LMConfig", "load_lm", "save_lm"]

LM_FORMAT = "attnlab.lm/1"
LM_CONFIG_FILE = "config.json"
LM_WEIGHTS_FILE = "model.safetensors"


def _norm(d_model: int, eps: float, on: bool) -> nn.Module:
    """A LayerNorm, or the identity (no parameters) when norms are off."""
    return nn.LayerNorm(d_model, eps=eps) if on else nn.Identity()


class CausalBlock(nn.Module):
    """One decoder block without cross-attention: ``x + SA(LN(x))`` (causal, rotary), then ``x + FFN(LN(x))``.

    ``mlp=False``: no feed-forward sublayer (no ``ff``, no ``norm2``); ``norm=False``: ``norm1`` (and ``norm2``) are
    the identity, ``x + SA(x)``."""

    def __init__(self, cfg: TransformerConfig, mlp: bool = True, norm: bool = True) -> None:
        super().__init__()
        self.config = cfg  # pre-norm (cfg.norm_first): what attribution's layer_parts reads
        self.self_attn = MultiHeadAttention.from_config(cfg.attention())
        self.ff: FeedForward | None = FeedForward.from_config(cfg.feed_forward()) if mlp else None
        self.norm1 = _norm(cfg.d_model, cfg.eps, norm)
        self.norm2 = _norm(cfg.d_model, cfg.eps, norm) if mlp else None
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, cache: KVCache | None = None) -> Tensor:  # (B, L, M) -> (B, L, M)
        def attend(h: Tensor) -> Tensor:
            return self.self_attn(h, causal=True, cache=cache)[0]

        x = residual(x, self.norm1, attend, self.dropout, True)  # type: ignore[arg-type]
        if self.ff is None:
            return x
        return residual(x, self.norm2, self.ff, self.dropout, True)  # type: ignore[arg-type]


class CausalLM(nn.Module):
    """``ids (B, L) -> logits (B, L, V)``: the distribution of the token after each position.

    With ``cache`` (from :meth:`new_cache`, passed at every step) only the new tokens are fed; the rotary positions
    continue after the cached ones, so the logits equal those of the whole sequence at once."""

    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        check.instance("config", config, LMConfig, "an LMConfig", "build one with LMConfig(vocab_size=...)")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(CausalBlock(config.layer(), config.mlp, config.norm)
                                    for _ in range(config.n_layers))
        self.norm = _norm(config.d_model, 1e-5, config.norm)  # nn.LayerNorm's default eps, as before

    def new_cache(self) -> list[KVCache]:
        """Empty key/value caches, one per block."""
        return [KVCache() for _ in self.blocks]

    def forward(self, ids: Tensor, cache: list[KVCache] | None = None) -> Tensor:
        if ids.dim() != 2:
            raise ShapeError(f"ids must be (batch, length) token ids, got shape {tuple(ids.shape)}; add a batch "
                             f"dimension with ids[None]")
        if cache is not None and len(cache) != len(self.blocks):
            raise ConfigError(f"cache has {len(cache)} entries but the model has {len(self.blocks)} blocks; make it "
                              f"with model.new_cache()")
        x = self.drop(self.embed(ids))  # (B, L, M)
        for i, block in enumerate(self.blocks):
            x = block(x, cache[i] if cache is not None else None)  # (B, L, M)
        return F.linear(self.norm(x), self.embed.weight)  # (B, L, V), tied to the embeddings

    @torch.no_grad()
    def attention_weights(self, ids: Tensor) -> Tensor:
        """``(B, n_layers, H, L, L)`` every block's attention weights on ``ids`` ``(B, L)`` (eval mode for the
        call), read from each layer's attention hook."""
        kept: list[Tensor] = []

        def keep(call: AttentionCall) -> None:
            assert call.weights is not None
            kept.append(call.weights.detach().float())  # (B, H, L, L)

        blocks: list[CausalBlock] = list(self.blocks)  # type: ignore[arg-type]
        detach = [block.self_attn.attn_hook.attach(keep, weights=True) for block in blocks]
        was_training = self.training
        self.eval()
        try:
            self(ids)
        finally:
            self.train(was_training)
            for d in detach:
                d()
        return torch.stack(kept, dim=1)  # (B, n_layers, H, L, L)


def save_lm(folder: str | os.PathLike[str], model: CausalLM, meta: dict[str, str]) -> Path:
    """Write ``model`` and ``meta`` (strings) into ``folder`` (created); the same weights and meta give the same
    bytes."""
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise ConfigError(f"meta must map strings to strings, got {check.got(meta)}; store other values as JSON")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    atomic_write_bytes(folder / LM_WEIGHTS_FILE, safetensors_bytes(tensors, {"format": LM_FORMAT}))
    header = {"format": LM_FORMAT, "config": model.config.to_dict(), "meta": meta}
    atomic_write_text(folder / LM_CONFIG_FILE, json.dumps(header, indent=2, ensure_ascii=False) + "\n")
    return folder


def load_lm(folder: str | os.PathLike[str]) -> tuple[CausalLM, dict[str, str]]:
    """``(model in eval mode, meta)`` from a folder :func:`save_lm` wrote."""
    from safetensors.torch import load_file

    folder = Path(folder)
    try:
        header = json.loads((folder / LM_CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"{str(folder)!r} holds no readable {LM_CONFIG_FILE} ({exc}); pass the --out folder "
                             f"of `attnlab train lm`") from None
    if not isinstance(header, dict) or header.get("format") != LM_FORMAT:
        raise ModelLoadError(f"{str(folder)!r} is not an attnlab language model (format "
                             f"{header.get('format') if isinstance(header, dict) else None!r}, expected "
                             f"{LM_FORMAT!r}); pass the --out folder of `attnlab train lm`")
    try:
        model = CausalLM(LMConfig(**header["config"]))
        model.load_state_dict(load_file(str(folder / LM_WEIGHTS_FILE)), strict=True)
    except Exception as exc:
        raise ModelLoadError(f"cannot load the language model in {str(folder)!r} ({type(exc).__name__}: {exc}); "
                             f"the files are damaged or from another version: train again") from None
    return model.eval(), dict(header.get("meta", {}))
