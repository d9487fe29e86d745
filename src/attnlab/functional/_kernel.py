"""The typed extension point: what a registered kernel is and can do (declared, never found by calling it), the one
registry every layer asks, and what the efficient kernels share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from torch import Tensor

from ..errors import ConfigError
from ..masks import Mask

__all__ = ["KERNELS", "Kernel", "KernelSpec", "get_kernel", "refuse", "register_kernel", "reject_options"]


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


@dataclass(frozen=True)
class KernelSpec:
    """A registered kernel and what it can do, declared where it is registered: a layer asks these fields, and never
    calls the kernel on a made-up input to find out.  Calling the spec calls the kernel.

    ``weights``: it can return the ``(L x S)`` weights (``return_weights=True``, hence ``attnlab.capture``);
    ``dropout``: it can drop out attention weights (``dropout > 0``); ``options``: the names of its own keyword
    options (None: any keyword, which the kernel checks itself); ``check``: a function that raises
    :class:`~attnlab.errors.ConfigError` for a bad option value, so a layer refuses it when it is built."""

    kernel: Kernel
    weights: bool
    dropout: bool
    options: tuple[str, ...] | None = ()
    check: Callable[[Mapping[str, Any]], None] | None = None

    def __call__(self, q: Tensor, k: Tensor, v: Tensor, **kwargs: Any) -> tuple[Tensor, Tensor | None]:
        return self.kernel(q, k, v, **kwargs)

    def check_options(self, name: str, options: Mapping[str, Any]) -> None:
        """Refuse an option the kernel does not declare (naming those it takes), then a bad value (``check``)."""
        if self.options is not None:
            reject_options(name, {k: v for k, v in options.items() if k not in self.options}, self.options)
        if self.check is not None and options:
            self.check(options)


# name -> the kernel and its declared abilities.  attnlab.functional registers its own; attnlab.parallel registers
# "ring" the same way when it is imported (attnlab.layers imports it).
KERNELS: dict[str, KernelSpec] = {}


def register_kernel(name: str, kernel: Kernel, *, weights: bool, dropout: bool, options: tuple[str, ...] | None = (),
                    check: Callable[[Mapping[str, Any]], None] | None = None) -> KernelSpec:
    """Register ``kernel`` under ``name`` with its abilities (see :class:`KernelSpec`); layers then take
    ``kernel=name``.  A name already registered to another kernel is a ConfigError."""
    spec = KernelSpec(kernel, weights, dropout, options, check)
    held = KERNELS.get(name)
    if held is not None and held.kernel is not kernel:
        raise ConfigError(f"a kernel named {name!r} is registered already ({held.kernel!r}); register yours under "
                          f"another name")
    KERNELS[name] = spec
    return spec


def get_kernel(name: str) -> KernelSpec:
    """The kernel registered under ``name`` (see :data:`KERNELS`) with its declared abilities."""
    try:
        return KERNELS[name]
    except KeyError:
        raise ConfigError(f"unknown attention kernel {name!r}; choose one of {sorted(KERNELS)}") from None


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
