"""Multi-head attention as a layer: project, split into heads, run a kernel, merge, project.

Letters: B batch, L query length, S key length, H heads, Dk per-head query/key size, Dv per-head value
size, M d_model.  Inputs and outputs are batch first, ``(B, L, M)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torch import Tensor, nn

from .. import _validate as check
from ..errors import ConfigError, MaskError, ShapeError
from ..functional import merge_masks, resolve_mask
from ..functional.rotary import apply_rotary
from ..masks import Mask
from ..parallel import current_shard
from ..trace import Kind
from ._config import Configured, build, check_kernel_options, frozen_options, layer_kernel
from ._hook import AttentionCall, AttentionHook
from .cache import KVCache

if TYPE_CHECKING:
    from torch.nn import MultiheadAttention as TorchMHA

__all__ = ["AttentionConfig", "MultiHeadAttention"]


@dataclass(frozen=True)
class AttentionConfig:
    """The sizes and options of one :class:`MultiHeadAttention` (its constructor takes exactly these)."""

    d_model: int  # width of the queries and of the output
    n_heads: int  # number of heads; each attends on its own projection
    d_k: int | None = None  # per-head query/key size; None = d_model // n_heads (must divide)
    d_v: int | None = None  # per-head value size; None = d_k
    dropout: float = 0.0  # dropout on the attention weights, in training only
    bias: bool = True  # biases in the four projections
    kernel: str = "dense"  # name in attnlab.functional.KERNELS
    d_key_in: int | None = None  # width of the key input; None = d_model (torch's kdim)
    d_value_in: int | None = None  # width of the value input; None = d_key_in (torch's vdim)
    # per-instance options of the kernel, passed to each call as **kernel_options (e.g. {"window": 3} for
    # kernel="local"); checked against the kernel's signature when the config is made; stored read-only
    kernel_options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    # rotary positions (RoPE, Su et al. 2021): rotate the projected queries and keys by their positions before
    # the kernel (self-attention only; needs an even d_k); see attnlab.functional.rotary
    rotary: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        check.positive_int("d_model", self.d_model)
        check.positive_int("n_heads", self.n_heads)
        for name in ("d_k", "d_v", "d_key_in", "d_value_in"):
            check.positive_int(name, getattr(self, name), optional=True)
        if self.d_k is None and self.d_model % self.n_heads != 0:
            raise ConfigError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                f"choose n_heads dividing d_model or pass d_k (and d_v) explicitly"
            )
        check.probability("dropout", self.dropout)
        check.boolean("bias", self.bias, "biases in the four projections")
        check.boolean("rotary", self.rotary, "True = rotate queries and keys by their positions (RoPE)")
        if self.rotary and self.head_k % 2:
            raise ConfigError(f"rotary=True rotates pairs of query/key features, but the per-head size d_k is "
                              f"{self.head_k} (odd); choose d_model and n_heads so that d_model // n_heads is "
                              f"even, or pass an even d_k")
        layer_kernel(self.kernel)  # raises ConfigError naming the registered kernels
        object.__setattr__(self, "kernel_options", frozen_options("kernel_options", self.kernel_options))
        check_kernel_options(self.kernel, self.kernel_options)

    @property
    def head_k(self) -> int:
        return self.d_k if self.d_k is not None else self.d_model // self.n_heads

    @property
    def head_v(self) -> int:
        return self.d_v if self.d_v is not None else self.head_k

    @property
    def key_in(self) -> int:
        return self.d_key_in if self.d_key_in is not None else self.d_model

    @property
    def value_in(self) -> int:
        return self.d_value_in if self.d_value_in is not None else self.key_in


class MultiHeadAttention(Configured, nn.Module):
    r"""Multi-head scaled dot-product attention (Vaswani et al., 2017), batch first.

    ``MultiHead(Q, K, V) = Concat(head_1..head_H) W_O`` with ``head_i = Attention(Q W_Q^i, K W_K^i, V W_V^i)``.
    The attention itself is the kernel named by ``kernel`` (see :func:`attnlab.functional.get_kernel`),
    called with ``**kernel_options``; the attribute ``self.kernel`` may be changed after construction
    (the options are then checked against the new kernel at the next call).

    ``rotary=True`` adds rotary positions (Su et al., 2021): the projected queries and keys of each head are
    rotated by their positions (:func:`attnlab.functional.rotary.apply_rotary`) before the kernel, so the scores
    depend on relative positions.  It works with every kernel, since each takes q and k (exact relative scores
    for the softmax kernels; see ``apply_rotary`` for the linear ones).  With a :class:`KVCache` the new
    positions continue after the cached ones.  It is for self-attention: a rotary layer refuses a separate key
    (cross-attention, whose two sequences share no positions).

    ``MultiHeadAttention(d_model, n_heads, **options)`` takes the fields of :class:`AttentionConfig`
    (``d_k``, ``d_v``, ``dropout``, ``bias``, ``kernel``, ``d_key_in``, ``d_value_in``, ``kernel_options``),
    in that order when positional, and ``rotary`` (by keyword only); ``MultiHeadAttention.from_config(cfg)``
    builds the layer a config describes.
    The config is ``self.config``.
    """

    config_type = AttentionConfig

    def __init__(self, d_model: int, n_heads: int, *args: Any, **options: Any) -> None:
        super().__init__()
        cfg = build(AttentionConfig, "MultiHeadAttention", d_model, n_heads, *args, **options)
        self.config = cfg
        self.n_heads = cfg.n_heads
        self.kernel = cfg.kernel
        self._options_checked_for = cfg.kernel  # the kernel cfg.kernel_options were checked against
        h, dk, dv, bias = cfg.n_heads, cfg.head_k, cfg.head_v, cfg.bias
        self.q_proj = nn.Linear(cfg.d_model, h * dk, bias=bias)
        self.k_proj = nn.Linear(cfg.key_in, h * dk, bias=bias)
        self.v_proj = nn.Linear(cfg.value_in, h * dv, bias=bias)
        self.out_proj = nn.Linear(h * dv, cfg.d_model, bias=bias)
        self.attn_hook = AttentionHook()
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform projections and zero biases (as ``torch.nn.MultiheadAttention``)."""
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            nn.init.xavier_uniform_(lin.weight)
            if lin.bias is not None:
                nn.init.zeros_(lin.bias)

    def _split(self, x: Tensor, d: int) -> Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.n_heads, d).transpose(1, 2)  # (B, H, n, d)

    def _keys_values(self, key: Tensor, value: Tensor, cross: bool, cache: KVCache | None,
                     past: int = 0) -> tuple[Tensor, Tensor]:
        """Projected keys and values, through the cache when there is one; with ``rotary`` the new keys are
        rotated by their positions (from ``past``, the cached length) before they are cached."""
        cfg = self.config
        if cross and cache is not None and not cache.empty:
            assert cache.keys is not None and cache.values is not None
            if len(cache) != key.shape[1] or cache.keys.shape[0] != key.shape[0]:
                raise ShapeError(
                    f"the cross-attention cache holds a memory of (batch, length) = "
                    f"{(cache.keys.shape[0], len(cache))} but key has {(key.shape[0], key.shape[1])}; "
                    f"start a new KVCache() for a new memory"
                )
            return cache.keys, cache.values
        k = self._split(self.k_proj(key), cfg.head_k)  # (B, H, S, Dk)
        v = self._split(self.v_proj(value), cfg.head_v)  # (B, H, S, Dv)
        if cfg.rotary:
            k = apply_rotary(k, offset=past, positions=self._positions(k))  # (B, H, S, Dk), positions past ..
        if cache is None:
            return k, v
        if cross:
            cache.keys, cache.values = k, v  # the memory, reused by the next calls
            return k, v
        return cache.append(k, v)  # (B, H, S_past + S, D)

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        *,
        mask: Tensor | Mask | None = None,
        key_padding_mask: Tensor | None = None,
        causal: bool = False,
        return_weights: bool = False,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(B, L, d_model)``.
            key: ``(B, S, d_key_in)``; None means self-attention (``key = value = query``). A key
                tensor other than ``query`` makes this cross-attention.
            value: ``(B, S, d_value_in)``; None means ``value = key``.
            mask: bool (**True = may attend**), float (added to the scores) or an
                :class:`attnlab.masks.Mask`; broadcasts to ``(B, H, L, S)``.
            key_padding_mask: ``(B, S)`` bool, **True = real token**; padded keys get no weight.
            causal: query ``i`` sees keys ``j <= i + S - L`` (bottom-right aligned, so that new
                queries line up with the end of a cache).
            return_weights: also return the weights.
            cache: a :class:`KVCache`. Self-attention appends the new projected keys/values and
                attends over all of them; cross-attention projects the memory on the first call and
                reuses it afterwards. ``S`` then counts every cached key.

        Returns:
            ``(output (B, L, d_model), weights (B, H, L, S) or None)``: weights per head, never averaged.
            A query with no allowed key gets zero weights and an attention output of zeros (the layer
            output is then the output projection's bias).
        """
        cfg = self.config
        cross = key is not None and key is not query
        key = query if key is None else key
        value = key if value is None else value
        like = self.q_proj.weight
        check.features("query", query, 3, cfg.d_model, "(batch, q_len, d_model)", like)
        check.features("key", key, 3, cfg.key_in, "(batch, k_len, d_key_in)", like)
        check.features("value", value, 3, cfg.value_in, "(batch, k_len, d_value_in)", like)
        check.same_batch(("query", "key", "value"), (query, key, value))
        check.agree(("key", "value"), [key.shape[1], value.shape[1]], "length (dim 1)", "every key needs one value")

        q = self._split(self.q_proj(query), cfg.head_k)  # (B, H, L, Dk)
        past = 0 if cache is None else len(cache)  # positions already cached (self-attention decoding)
        if cfg.rotary:
            if cross:
                raise ConfigError(
                    "this MultiHeadAttention has rotary=True, which rotates queries and keys by their positions in "
                    "one sequence, but it was given a separate key tensor (cross-attention); build the "
                    "cross-attention layer with rotary=False, or pass key=None for self-attention")
            q = apply_rotary(q, offset=past, positions=self._positions(q))  # (B, H, L, Dk), positions past ..
        k, v = self._keys_values(key, value, cross, cache, past)  # (B, H, S, Dk), (B, H, S, Dv)

        try:
            m = resolve_mask(mask, q, k)  # broadcasts to (B, H, L, S)
        except MaskError as e:
            raise MaskError(f"{e} (a (batch, k_len) padding mask can go to key_padding_mask= instead)") from e
        if key_padding_mask is not None:
            kpm = check.key_padding(key_padding_mask, query.shape[0], k.shape[-2])
            m = merge_masks(m, kpm[:, None, None, :])  # (B, 1, 1, S) broadcast over heads and queries

        hook = self.attn_hook
        need = return_weights or bool(hook.active)
        kernel = layer_kernel(self.kernel)
        if self.kernel != self._options_checked_for:  # switched after construction: do the options suit it?
            check_kernel_options(self.kernel, cfg.kernel_options)
            self._options_checked_for = self.kernel
        p = cfg.dropout if self.training else 0.0
        out, weights = kernel(q, k, v, mask=m, causal=causal, dropout=p, return_weights=need, **cfg.kernel_options)
        if weights is not None or hook.wanted:  # (B, H, L, Dv), (B, H, L, S) or None
            kind: Kind = "cross" if cross else "causal" if causal else "self"
            call = hook(AttentionCall(kind, weights, q, k, self._scale(q.shape[-1]), m, causal, self.kernel,
                                      cfg.kernel_options, heads=out))
            weights, out = call.weights, _heads_of(call, out)
        b, _, l, _ = out.shape
        out = out.transpose(1, 2).reshape(b, l, self.n_heads * cfg.head_v)  # (B, L, H * Dv)
        return self.out_proj(out), (weights if return_weights else None)

    def _positions(self, x: Tensor) -> Tensor | None:
        """The global positions of the rows of a sharded sequence (kernel ``"ring"`` inside
        :func:`attnlab.parallel.sequence_parallel`), or None: consecutive from the cache's length."""
        shard = current_shard() if self.kernel == "ring" else None
        return None if shard is None else shard.positions(x.device)

    def _scale(self, d_k: int) -> float:
        """The factor the kernel puts on ``q @ k^T``: its ``scale`` option (default ``1 / sqrt(d_k)``) over
        its ``temperature`` (for the softmax kernels; recorded with the weights by ``capture(qk=True)``)."""
        opts = self.config.kernel_options
        scale = opts.get("scale")
        return float(scale if scale is not None else d_k**-0.5) / float(opts.get("temperature", 1.0))

    @classmethod
    def from_torch(cls, module: TorchMHA) -> MultiHeadAttention:
        """A copy of a ``torch.nn.MultiheadAttention`` (weights, biases, dropout).

        The copy is batch first whatever ``module.batch_first`` says: feed it ``(B, L, E)``. Convert
        torch's masks (bool True = blocked) with :func:`attnlab.layers.from_torch_masks`.
        ``add_bias_kv`` and ``add_zero_attn`` are not supported (ConfigError).
        """
        from ._torch_mha import import_torch_mha

        return import_torch_mha(cls, module)


def _heads_of(call: AttentionCall, heads: Tensor) -> Tensor:
    """The heads' outputs a hook returned, checked against the layer's own ``heads`` (B, H, L, Dv)."""
    if call.heads is None or call.heads.shape != heads.shape:
        got = None if call.heads is None else tuple(call.heads.shape)
        raise ShapeError(f"a listener of the attention hook returned heads of shape {got}; the layer needs "
                         f"{tuple(heads.shape)} (batch, heads, q_len, d_v): return "
                         f"dataclasses.replace(call, heads=...) with a tensor of that shape")
    return call.heads
