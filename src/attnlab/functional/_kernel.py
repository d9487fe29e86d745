"""The typed extension point: what a registered kernel is, and what the efficient ones share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from torch import Tensor

from ..errors import ConfigError
from ..masks import Mask

__all__ = ["Kernel", "refuse", "reject_options"]


class Kernel(Protocol):
    """A kernel registered in :data:`attnlab.functional.KERNELS`, which layers call by name.

    ``q`` ``(..., L, E)``, ``k`` ``(..., S, E)``, ``v`` ``(..., S, Ev)``; everything else by keyword.
    Returns ``(output (..., L, Ev), weights (..., L, S) or None)``.  ``options`` are the kernel's own
    settings (``window=`` for ``"local"``, ``features=`` / ``seed=`` for ``"performer"``, ...), which a
    layer passes per instance: ``MultiHeadAttention(..., kernel="local", kernel_options={"window": 64})``.
    A kernel raises :class:`~attnlab.errors.ConfigError` for an option it does not know.
    """

    def __call__(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        *,
        mask: Tensor | Mask | None = None,
        causal: bool = False,
        scale: float | None = None,
        dropout: float = 0.0,
        return_weights: bool = False,
        **options: Any,
    ) -> tuple[Tensor, Tensor | None]: ...

    def __hash__(self) -> int: ...  # functions are hashable: layers cache what a kernel's signature says


def reject_options(name: str, options: Mapping[str, Any], known: tuple[str, ...]) -> None:
    """Raise a ConfigError naming the options of kernel ``name`` when ``options`` holds any other."""
    if options:
        unknown = ", ".join(repr(key) for key in sorted(options))
        takes = f"it takes {', '.join(known)}" if known else "it takes none"
        raise ConfigError(
            f"kernel {name!r} has no option{'s' if len(options) > 1 else ''} {unknown}; {takes}. Check the "
            f"spelling (in kernel_options= or the keyword arguments), or choose the kernel that has it "
            f"(attnlab.functional.KERNELS)"
        )


def refuse(name: str, return_weights: bool, dropout: float, *, dropout_ok: bool = False) -> None:
    """Raise a ConfigError when a kernel that never builds the ``L x S`` weights is asked for them (or
    for dropout on them, which needs them)."""
    if return_weights:
        raise ConfigError(
            f"kernel {name!r} never builds the (L x S) weights, but return_weights=True was asked (directly or "
            f"by attnlab.capture); use kernel='dense' to get weights, or attnlab.functional.attention_stats for "
            f"entropy / distance / top-k of long inputs"
        )
    if dropout and not dropout_ok:
        raise ConfigError(
            f"kernel {name!r} has no attention weights to drop out, got dropout={dropout!r}; pass dropout=0.0 "
            f"(e.g. MultiHeadAttention(dropout=0.0)) or use kernel='dense' / 'memory_efficient'"
        )
