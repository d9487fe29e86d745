"""How every layer is built: from one frozen config, through one path.

A layer's options are the fields of its config dataclass, and nowhere else.  ``Layer(*args, **options)``
binds them to the config (:func:`build`, so an unknown option is a :class:`ConfigError` naming the
accepted ones), and ``Layer.from_config(cfg)`` is ``Layer(**options_of(cfg))``.  Adding an option means
adding a field (with its reason and its check in ``__post_init__``) and reading it where it is used.

The per-instance options of an attention kernel (``kernel_options``) are checked here too, against what the
kernel's registration declares (:class:`attnlab.functional.KernelSpec`: its option names and their check), so a
misspelt or bad option fails when the layer is built, not at its first forward; nothing here calls a kernel.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, TypeVar

from .. import _validate as check
from .. import parallel  # noqa: F401  (importing it registers the kernel "ring", as functional registers its own)
from ..errors import AttnLabError, ConfigError
from ..functional import KernelSpec, get_kernel

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


def layer_kernel(name: str) -> KernelSpec:
    """The kernel a layer calls by name, with its declared abilities: any of :data:`attnlab.functional.KERNELS`
    (``"ring"``, ring attention over a sequence sharded across ranks, among them)."""
    return get_kernel(name)


def kernel_takes_dropout(kernel_name: str) -> bool:
    """Whether the kernel can drop out attention weights (its registration says; the efficient kernels never build
    the weights and refuse ``dropout > 0``)."""
    return layer_kernel(kernel_name).dropout


def check_kernel_options(kernel_name: str, options: Mapping[str, Any]) -> None:
    """Refuse the arguments the layer passes itself, an option the kernel does not declare (naming those it takes)
    and a bad value (the kernel's declared check)."""
    spec = layer_kernel(kernel_name)
    for key in options:
        if key in CALL_ARGUMENTS:
            raise ConfigError(
                f"kernel_options may not set {key!r}: the layer passes {', '.join(CALL_ARGUMENTS[3:])} itself "
                f"(q, k, v too); set dropout on the layer, mask/causal in forward()"
            )
    try:
        spec.check_options(kernel_name, options)
    except (AttnLabError, TypeError, ValueError) as e:
        raise ConfigError(f"kernel {kernel_name!r} refuses kernel_options={dict(options)!r}: {e}") from None
