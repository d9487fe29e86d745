"""The parts a transformer layer wraps around attention: its config, the position-wise
feed-forward network, and the residual connection with pre- or post-normalisation.

Letters: B batch, L length, M d_model, F d_ff.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch.nn.functional as F
from torch import Tensor, nn

from .. import _validate as check
from ..errors import ConfigError
from .multihead import AttentionConfig

__all__ = ["FeedForward", "TransformerConfig", "residual"]

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"gelu": F.gelu, "relu": F.relu}


@dataclass(frozen=True)
class TransformerConfig:
    """One transformer layer's sizes and options (shared by the encoder and decoder layers and stacks)."""

    d_model: int  # width of the residual stream
    n_heads: int  # attention heads
    d_ff: int  # hidden width of the feed-forward network (4 * d_model in the original paper)
    dropout: float = 0.0  # on the attention weights, the FFN hidden layer and each residual branch
    norm_first: bool = False  # False: post-norm, LayerNorm(x + f(x)) as in the paper; True: pre-norm x + f(LN(x))
    activation: str = "gelu"  # "gelu" (exact, erf form) or "relu"
    d_k: int | None = None  # per-head query/key size; None = d_model // n_heads
    d_v: int | None = None  # per-head value size; None = d_k
    kernel: str = "dense"  # attention kernel name
    eps: float = 1e-5  # LayerNorm epsilon

    def __post_init__(self) -> None:
        check.positive_int("d_ff", self.d_ff)
        check.one_of("activation", self.activation, tuple(ACTIVATIONS))
        check.positive_float("eps", self.eps)
        if not isinstance(self.norm_first, bool):
            raise ConfigError(f"norm_first must be True (pre-norm) or False (post-norm), got {self.norm_first!r}")
        self.attention()  # d_model, n_heads, d_k, d_v, dropout and kernel are checked there

    def attention(self) -> AttentionConfig:
        """The config of the layer's attention blocks."""
        return AttentionConfig(self.d_model, self.n_heads, self.d_k, self.d_v, self.dropout, True, self.kernel)


class FeedForward(nn.Module):
    """``W_2 drop(act(W_1 x + b_1)) + b_2``, applied at every position."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu", dropout: float = 0.0) -> None:
        super().__init__()
        check.one_of("activation", activation, tuple(ACTIVATIONS))
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:  # (B, L, M) -> (B, L, M)
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))


def residual(
    x: Tensor, norm: nn.LayerNorm, sublayer: Callable[[Tensor], Tensor], drop: nn.Module, first: bool
) -> Tensor:
    """Pre-norm ``x + drop(f(norm(x)))`` when ``first``, else post-norm ``norm(x + drop(f(x)))``."""
    if first:
        return x + drop(sublayer(norm(x)))
    return norm(x + drop(sublayer(x)))
