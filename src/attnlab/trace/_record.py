"""The record of one attention call (:class:`AttentionRecord`) and the names of its kinds and stored dtypes: what the
trace, its file and its Hugging Face conversion all read, below each of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from torch import Tensor

from ..errors import InputError, ShapeError

__all__ = ["KINDS", "STORED_DTYPES", "AttentionRecord", "Kind", "StoredDtype", "as_kind"]

# What an attention call attends to: its own sequence, its own past (causal mask), or another sequence.
Kind = Literal["self", "causal", "cross"]
KINDS: tuple[Kind, ...] = get_args(Kind)

# How save() may store weights: exact, half precision, or 8-bit codes round(255 * w) (within 1/510, as the viewer)
StoredDtype = Literal["float32", "float16", "uint8"]
STORED_DTYPES: tuple[StoredDtype, ...] = get_args(StoredDtype)


def as_kind(value: object) -> Kind:
    """``value`` as a :data:`Kind`, or an :class:`InputError` naming the kinds there are."""
    if value not in KINDS:
        raise InputError(f"kind must be one of {KINDS}, got {value!r}")
    return value


@dataclass
class AttentionRecord:
    """One captured attention call.

    Attributes:
        name: the module path inside the model, e.g. ``"encoder.layer.3.attention.self"``.
        kind: ``"self"``, ``"causal"`` (self-attention with a causal mask) or ``"cross"``.
        layer: the index of this call's module among the trace's modules of the same kind, in call
            order (encoder self-attention 0..5, decoder causal 0..5 and cross 0..5 in a 6+6 model); the
            decoding steps of one module share its layer.
        weights: ``(batch, heads, q_len, k_len)`` float32 on the CPU; rows sum to one over allowed keys.
        query_tokens / key_tokens: readable tokens, or None when the capture did not know them.
        step: None for an ordinary call; in a generation with a key/value cache, 0 for the prefill call
            and 1, 2, ... for each decoding step of the same module (see :attr:`AttentionTrace.assembled`).
        q / k: with ``capture(model, qk=True)``, the queries ``(batch, heads, q_len, d_k)`` and keys
            ``(batch, heads, k_len, d_k)`` per head, float32 on the CPU, that the weights were computed
            from: ``weights = softmax(q @ k^T * scale + mask)`` for the softmax kernels; None otherwise.
        scale: the factor the scores ``q @ k^T`` were multiplied by (``1 / sqrt(d_k)`` mostly), when known.
    """

    name: str
    kind: Kind
    layer: int
    weights: Tensor
    query_tokens: list[str] | None = None
    key_tokens: list[str] | None = None
    step: int | None = None
    q: Tensor | None = None
    k: Tensor | None = None
    scale: float | None = None

    def __post_init__(self) -> None:
        as_kind(self.kind)
        if self.weights.ndim != 4:
            raise ShapeError(
                f"record weights must be (batch, heads, q_len, k_len), got shape {tuple(self.weights.shape)}"
            )
        b, h, lq, lk = self.weights.shape
        for label, toks, n in (("query_tokens", self.query_tokens, lq), ("key_tokens", self.key_tokens, lk)):
            if toks is not None and len(toks) != n:
                raise ShapeError(f"{self.name}: {label} has {len(toks)} tokens but the weights have {n}")
        if self.step is not None and (isinstance(self.step, bool) or not isinstance(self.step, int) or self.step < 0):
            raise InputError(f"{self.name}: step must be None or an integer >= 0, got {self.step!r}")
        for label, t, n in (("q", self.q, lq), ("k", self.k, lk)):
            if t is not None and (t.ndim != 4 or tuple(t.shape[:3]) != (b, h, n)):
                raise ShapeError(
                    f"{self.name}: {label} must be (batch, heads, {'q_len' if label == 'q' else 'k_len'}, d_k) = "
                    f"({b}, {h}, {n}, d_k) to match the weights {tuple(self.weights.shape)}, "
                    f"got shape {tuple(t.shape)}"
                )

    @property
    def n_heads(self) -> int:
        return int(self.weights.shape[1])

    def __repr__(self) -> str:
        shape = tuple(self.weights.shape)
        step = "" if self.step is None else f", step={self.step}"
        return f"AttentionRecord(name={self.name!r}, kind={self.kind!r}, layer={self.layer}{step}, weights={shape})"
