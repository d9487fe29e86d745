"""Convolution-augmented attention: global mixing by attention plus local mixing by a 1-D convolution
over the sequence, summed and normalised.  The convolution is depthwise by default (one filter per
channel) or, with ``groups=1``, a full convolution over the channels (every output channel reads every
input channel, as in the tutorials' block); ``groups`` in between splits the channels into that many groups.

Letters: B batch, L length, M d_model (the convolution's channels), K kernel_size, G groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor, nn

from .. import _validate as check
from ..errors import ConfigError
from ..masks import Mask
from ._config import Configured, build
from .multihead import AttentionConfig, MultiHeadAttention

__all__ = ["ConvAttentionBlock", "ConvAttentionConfig"]


@dataclass(frozen=True)
class ConvAttentionConfig:
    """Sizes of a :class:`ConvAttentionBlock` (its constructor takes exactly these)."""

    d_model: int  # width of the input and output, and channels of the convolution
    n_heads: int  # attention heads
    kernel_size: int = 3  # convolution width; odd, so the output stays aligned with the input
    dropout: float = 0.0  # on the attention weights
    eps: float = 1e-5  # LayerNorm epsilon
    kernel: str = "dense"  # the attention kernel's name
    kernel_options: Mapping[str, Any] = field(default_factory=dict, hash=False)  # passed to the attention's kernel
    # channel groups of the convolution: None = d_model (depthwise, one filter per channel, M * K weights);
    # 1 = a full convolution over the channels (M * M * K weights); any other divisor of d_model in between
    groups: int | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        check.positive_int("kernel_size", self.kernel_size)
        if self.kernel_size % 2 == 0:
            raise ConfigError(
                f"kernel_size must be odd so that every position is the centre of its window, got "
                f"{self.kernel_size}; use {self.kernel_size - 1} or {self.kernel_size + 1}"
            )
        check.positive_float("eps", self.eps, fix="e.g. eps=1e-5")
        attention = self.attention()  # checks d_model, n_heads, dropout, the kernel and its options
        object.__setattr__(self, "kernel_options", attention.kernel_options)  # the read-only copy
        check.positive_int("groups", self.groups, optional=True)
        if self.groups is not None and self.d_model % self.groups:
            raise ConfigError(
                f"groups={self.groups} does not divide d_model={self.d_model}: each group convolves d_model / groups "
                f"channels; use groups=1 (a full convolution), groups=None (depthwise, {self.d_model} groups) or a "
                f"divisor of {self.d_model}"
            )

    @property
    def conv_groups(self) -> int:
        """The convolution's channel groups (``groups``, with None read as ``d_model``: depthwise)."""
        return self.d_model if self.groups is None else self.groups

    def attention(self) -> AttentionConfig:
        """The config of the block's attention."""
        return AttentionConfig(self.d_model, self.n_heads, dropout=self.dropout, kernel=self.kernel,
                               kernel_options=self.kernel_options)


class ConvAttentionBlock(Configured, nn.Module):
    """``LayerNorm(MHA(x) + Conv1d(x))``, the convolution depthwise by default.

    Attention relates every pair of positions; the convolution (``kernel_size`` wide, zero padded) adds
    the local n-gram features attention has to learn the hard way.  ``groups=None`` (the default) makes it
    depthwise, one filter per channel; ``groups=1`` a full convolution, each output channel a filter over
    every input channel (the tutorials' block); ``groups=G`` (a divisor of ``d_model``) lets each of ``G``
    groups of ``d_model / G`` channels read only its own group.
    With ``key_padding_mask``, padded positions are zeroed before the convolution, so their content
    reaches no real position through either branch.

    ``ConvAttentionBlock(d_model, n_heads, **options)`` takes the fields of :class:`ConvAttentionConfig`.
    """

    config_type = ConvAttentionConfig

    def __init__(self, d_model: int, n_heads: int, *args: Any, **options: Any) -> None:
        super().__init__()
        cfg = build(ConvAttentionConfig, "ConvAttentionBlock", d_model, n_heads, *args, **options)
        self.config = cfg
        self.attn = MultiHeadAttention.from_config(cfg.attention())
        m, w = cfg.d_model, cfg.kernel_size
        self.conv = nn.Conv1d(m, m, w, padding=w // 2, groups=cfg.conv_groups)  # weight (M, M / G, K)
        self.norm = nn.LayerNorm(m, eps=cfg.eps)

    def forward(
        self, x: Tensor, *, mask: Tensor | Mask | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        """``x`` ``(B, L, d_model)`` to ``(B, L, d_model)``; masks as :meth:`MultiHeadAttention.forward`."""
        a, _ = self.attn(x, mask=mask, key_padding_mask=key_padding_mask)  # (B, L, M)
        if key_padding_mask is not None:
            real = check.key_padding(key_padding_mask, x.shape[0], x.shape[1])
            x = x * real[..., None].to(x.dtype)  # (B, L, M), padded positions zeroed
        c = self.conv(x.transpose(1, 2)).transpose(1, 2)  # (B, M, L) -> conv -> (B, L, M)
        return self.norm(a + c)
