"""The parts a transformer layer wraps around attention: its config, the position-wise
feed-forward network, and the residual connection with pre- or post-normalisation.

Letters: B batch, L length, M d_model, F d_ff.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from .. import _validate as check
from ..errors import ConfigError
from ._config import Configured, build, kernel_takes_dropout
from .multihead import AttentionConfig

__all__ = ["FeedForward", "FeedForwardConfig", "TransformerConfig", "residual"]

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"gelu": F.gelu, "relu": F.relu}


@dataclass(frozen=True)
class FeedForwardConfig:
    """The sizes of a :class:`FeedForward` (its constructor takes exactly these)."""

    d_model: int  # width of the input and the output
    d_ff: int  # hidden width (4 * d_model in the original paper)
    activation: str = "gelu"  # "gelu" (exact, erf form) or "relu"
    dropout: float = 0.0  # on the hidden layer, in training only

    def __post_init__(self) -> None:
        check.positive_int("d_model", self.d_model)
        check.positive_int("d_ff", self.d_ff)
        check.one_of("activation", self.activation, tuple(ACTIVATIONS))
        check.probability("dropout", self.dropout)


@dataclass(frozen=True)
class TransformerConfig:
    """One transformer layer's sizes and options, shared by the encoder and decoder layers and stacks
    (their constructors take exactly these)."""

    d_model: int  # width of the residual stream
    n_heads: int  # attention heads
    d_ff: int  # hidden width of the feed-forward network (4 * d_model in the original paper)
    dropout: float = 0.0  # on the attention weights (see attention_dropout), the FFN hidden layer, each residual branch
    norm_first: bool = False  # False: post-norm, LayerNorm(x + f(x)) as in the paper; True: pre-norm x + f(LN(x))
    activation: str = "gelu"  # "gelu" (exact, erf form) or "relu"
    d_k: int | None = None  # per-head query/key size; None = d_model // n_heads
    d_v: int | None = None  # per-head value size; None = d_k
    kernel: str = "dense"  # attention kernel name
    eps: float = 1e-5  # LayerNorm epsilon
    kernel_options: Mapping[str, Any] = field(default_factory=dict, hash=False)  # passed to every attention's kernel
    # rotary positions (RoPE) in the self-attention, never in a decoder's cross-attention; by keyword only
    rotary: bool = field(default=False, kw_only=True)
    # dropout on the attention weights; None = `dropout` for the kernels that build weights (dense,
    # memory_efficient) and 0 for those that never do (local, linear, performer, ...: they refuse dropout)
    attention_dropout: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        check.positive_float("eps", self.eps, fix="e.g. eps=1e-5")
        check.boolean("norm_first", self.norm_first, "True = pre-norm, False = post-norm as in the paper")
        if self.attention_dropout is not None:
            check.probability("attention_dropout", self.attention_dropout)
            if self.attention_dropout > 0 and not kernel_takes_dropout(self.kernel):
                raise ConfigError(f"attention_dropout={self.attention_dropout}, but kernel {self.kernel!r} never "
                                  f"builds the attention weights, so it has none to drop out; leave "
                                  f"attention_dropout=None (0 for this kernel) or choose kernel='dense' / "
                                  f"'memory_efficient'")
        self.feed_forward()  # d_ff and activation are checked there
        attention = self.attention()  # d_model, n_heads, d_k, d_v, dropout, kernel and its options are checked there
        object.__setattr__(self, "kernel_options", attention.kernel_options)  # the read-only copy

    def attention(self, cross: bool = False) -> AttentionConfig:
        """The config of the layer's self-attention, or with ``cross`` of its cross-attention (never rotary)."""
        p = self.attention_dropout
        if p is None:
            p = self.dropout if kernel_takes_dropout(self.kernel) else 0.0
        return AttentionConfig(self.d_model, self.n_heads, self.d_k, self.d_v, p, True, self.kernel,
                               kernel_options=self.kernel_options, rotary=self.rotary and not cross)

    def feed_forward(self) -> FeedForwardConfig:
        """The config of the layer's feed-forward network."""
        return FeedForwardConfig(self.d_model, self.d_ff, self.activation, self.dropout)


class FeedForward(Configured, nn.Module):
    """``W_2 drop(act(W_1 x + b_1)) + b_2``, applied at every position.

    ``FeedForward(d_model, d_ff, **options)`` takes the fields of :class:`FeedForwardConfig`."""

    config_type = FeedForwardConfig

    def __init__(self, d_model: int, d_ff: int, *args: Any, **options: Any) -> None:
        super().__init__()
        cfg = build(FeedForwardConfig, "FeedForward", d_model, d_ff, *args, **options)
        self.config = cfg
        self.activation = cfg.activation
        self.linear1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.linear2 = nn.Linear(cfg.d_ff, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor) -> Tensor:  # (B, L, M) -> (B, L, M)
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))


def residual(
    x: Tensor, norm: nn.LayerNorm, sublayer: Callable[[Tensor], Tensor], drop: nn.Module, first: bool
) -> Tensor:
    """Pre-norm ``x + drop(f(norm(x)))`` when ``first``, else post-norm ``norm(x + drop(f(x)))``."""
    if first:
        return x + drop(sublayer(norm(x)))
    return norm(x + drop(sublayer(x)))
