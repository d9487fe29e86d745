"""How every layer is built: from one frozen config, through one path.

A layer's options are the fields of its config dataclass, and nowhere else.  ``Layer(*args, **options)``
binds them to the config (:func:`build`, so an unknown option is a :class:`ConfigError` naming the
accepted ones), and ``Layer.from_config(cfg)`` is ``Layer(**options_of(cfg))``.  Adding an option means
adding a field (with its reason and its check in ``__post_init__``) and reading it where it is used.

The per-instance options of an attention kernel (``kernel_options``) are checked here too, by one call of
the kernel on a tiny input (every kernel refuses options it does not know), so a misspelt or bad option
fails when the layer is built, not at its first forward.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, TypeVar

import torch

from .. import _validate as check
from ..errors import AttnLabError, ConfigError
from ..functional import Kernel, get_kernel
from ..parallel import ring_kernel

C = TypeVar("C")
L = TypeVar("L", bound="Configured")

# What the layer itself passes to every kernel call (or never passes): not options.
CALL_ARGUMENTS = ("q", "k", "v", "mask", "causal", "scale", "dropout", "return_weights")


def option_names(config_type: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(config_type))


def options_of(config: Any) -> dict[str, Any]:
    """The config's fields as keyword arguments (shallow: a ``kernel_options`` mapping stays as it is)."""
    return {name: getattr(config, name) for name in option_names(type(config))}


def build(config_type: type[C], layer: str, *args: Any, **options: Any) -> C:
    """``config_type(*args, **options)``; a wrong option is a ConfigError naming ``layer``'s accepted options."""
    names = option_names(config_type)
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise ConfigError(
            f"{layer} got unknown option(s) {', '.join(map(repr, unknown))}; it takes {', '.join(names)} "
            f"(the fields of {config_type.__name__}); check the spelling"
        )
    try:
        inspect.signature(config_type).bind(*args, **options)
    except TypeError as e:
        raise ConfigError(f"{layer}: {e}; it takes {', '.join(names)} (the fields of {config_type.__name__})") from None
    return config_type(*args, **options)


class Configured:
    """A layer built from a frozen config of type ``config_type``, stored as ``self.config``."""

    config_type: ClassVar[type]

    @classmethod
    def from_config(cls: type[L], config: Any) -> L:
        """The layer ``config`` describes (new parameters, initialised as by the constructor)."""
        check.instance("config", config, cls.config_type, f"a {cls.config_type.__name__}",
                       f"build one with {cls.config_type.__name__}(...)")
        return cls(**options_of(config))


# --- kernel options --------------------------------------------------------------------------------


class FrozenOptions(Mapping[str, Any]):
    """A read-only copy of a mapping of options; unlike ``types.MappingProxyType`` it survives
    ``copy.deepcopy`` (which cloning a layer or a model uses)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._options = dict(options)

    def __getitem__(self, key: str) -> Any:
        return self._options[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._options)

    def __len__(self) -> int:
        return len(self._options)

    def __repr__(self) -> str:
        return repr(self._options)

    def __reduce__(self) -> tuple[type[FrozenOptions], tuple[dict[str, Any]]]:
        return FrozenOptions, (self._options,)


def frozen_options(name: str, options: Any) -> Mapping[str, Any]:
    """``options`` (a mapping with str keys) as a read-only copy."""
    if not isinstance(options, Mapping):
        raise ConfigError(f"{name} must be a mapping of option names to values, got {type(options).__name__}; "
                          f"pass e.g. {name}={{'window': 3}}")
    for key in options:
        check.instance(f"{name} key", key, str, "a str (an option's name)", "use the option's name as the key")
    return FrozenOptions(options)


def layer_kernel(name: str) -> Kernel:
    """The kernel a layer calls by name: a registered one (:data:`attnlab.functional.KERNELS`), or ``"ring"``
    (:func:`attnlab.parallel.ring_kernel`, ring attention over a sequence sharded across ranks)."""
    if name == "ring":
        return ring_kernel
    try:
        return get_kernel(name)
    except ConfigError as e:
        raise ConfigError(f"{e} (or 'ring', for a sequence sharded across ranks)") from None


def kernel_takes_dropout(kernel_name: str) -> bool:
    """Whether the kernel can drop out attention weights: the efficient kernels never build them and refuse
    ``dropout > 0`` (ConfigError); asked once per kernel, by one call on a tiny input."""
    return _takes_dropout(layer_kernel(kernel_name))


@functools.cache
def _takes_dropout(kernel: Kernel) -> bool:
    q = k = v = torch.zeros(1, 1, 2, 2)  # (B, H, L, D): the smallest problem
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):  # the probe's dropout draws leave no trace
            kernel(q, k, v, mask=None, causal=False, dropout=0.5, return_weights=False)
    except ConfigError:
        return False
    return True


def check_kernel_options(kernel_name: str, options: Mapping[str, Any], d_k: int, d_v: int) -> None:
    """Refuse the arguments the layer passes itself, then call the kernel once on a tiny input: the kernel's
    own ``reject_options`` names a misspelt option (with the ones it takes), its checks a bad value."""
    kernel = layer_kernel(kernel_name)
    for key in options:
        if key in CALL_ARGUMENTS:
            raise ConfigError(
                f"kernel_options may not set {key!r}: the layer passes {', '.join(CALL_ARGUMENTS[3:])} itself "
                f"(q, k, v too); set dropout on the layer, mask/causal in forward()"
            )
    if not options:
        return
    q = k = torch.zeros(1, 1, 2, d_k)  # (B, H, L, Dk): the smallest problem the kernel must accept
    v = torch.zeros(1, 1, 2, d_v)  # (B, H, S, Dv)
    try:
        with torch.no_grad():
            kernel(q, k, v, mask=None, causal=False, dropout=0.0, return_weights=False, **options)
    except (AttnLabError, TypeError, ValueError) as e:
        raise ConfigError(f"kernel {kernel_name!r} refuses kernel_options={dict(options)!r}: {e}") from None
