"""The checks of plain values (numbers, choices, flags, types), importing no torch: the configs that the CLI reads for
its ``--help`` use these, and :mod:`attnlab._validate` (which adds the tensor checks) re-exports them, so one rule holds
everywhere: an int is never a bool, a probability is in ``[0, 1)``, a size is an int >= 1.  Each failure raises an
:mod:`attnlab.errors` type whose message names the argument, says what it got, what it needed, and the fix."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any, TypeVar

from .errors import AttnLabError, ConfigError

__all__ = ["boolean", "got", "instance", "integer", "is_number", "non_negative_int", "one_of", "positive_float",
           "positive_int", "probability", "share", "window"]

T = TypeVar("T")


def got(value: object) -> str:
    """How a received value reads in a message: its repr, saying so when a bool stood in for a number."""
    if isinstance(value, bool):
        return f"{value!r} (a bool, which is not taken as a number)"
    torch = sys.modules.get("torch")  # a tensor can only exist once torch is imported
    if torch is not None and isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if value is None or isinstance(value, (int, float, str, tuple, list)):
        return repr(value)
    return f"a {type(value).__name__}"


def is_number(value: object) -> bool:
    """An int or a float, never a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- numbers -------------------------------------------------------------------------------------


def integer(name: str, value: Any, *, low: int = 0, optional: bool = False, fix: str | None = None) -> Any:
    """``value`` is an int >= ``low`` (never a bool), or None when ``optional``."""
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        none = " or None for the default" if optional else ""
        raise ConfigError(
            f"{name} must be an int >= {low}{none}, got {got(value)}; {fix or f'pass e.g. {name}={max(low, 1)}'}"
        )
    return value


def positive_int(name: str, value: Any, *, optional: bool = False, fix: str | None = None) -> Any:
    """``value`` is an int >= 1 (a size, a count), or None when ``optional``."""
    return integer(name, value, low=1, optional=optional, fix=fix)


def non_negative_int(name: str, value: Any, *, optional: bool = False, fix: str | None = None) -> Any:
    """``value`` is an int >= 0 (a width, an offset), or None when ``optional``."""
    return integer(name, value, low=0, optional=optional, fix=fix)


def probability(name: str, value: Any, *, fix: str = "use 0.0 for no dropout") -> Any:
    """``value`` is a number in ``[0, 1)`` (a dropout probability; a share of steps or items that 1 would make
    meaningless)."""
    if not is_number(value) or not 0.0 <= value < 1.0:
        raise ConfigError(f"{name} must be a number in [0, 1), got {got(value)}; {fix}")
    return value


def share(name: str, value: Any, *, fix: str = "0 turns it off") -> Any:
    """``value`` is a number in ``[0, 1]``, both ends included (a share of the loss, a target rate)."""
    if not is_number(value) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} must be a share in [0, 1], got {got(value)}; {fix}")
    return value


def positive_float(name: str, value: Any, *, optional: bool = False, fix: str | None = None) -> Any:
    """``value`` is a finite number > 0 (an epsilon, a scale, a temperature), or None when ``optional``."""
    if optional and value is None:
        return None
    if not is_number(value) or not math.isfinite(value) or value <= 0:
        none = " or None for the default" if optional else ""
        raise ConfigError(
            f"{name} must be a finite number > 0{none}, got {got(value)}; {fix or f'pass e.g. {name}=1.0'}"
        )
    return value


def boolean(name: str, value: Any, meaning: str) -> bool:
    """``value`` is True or False (not 0/1 or a string); ``meaning`` says what True does."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be True or False ({meaning}), got {got(value)}; pass a bool")
    return value


def one_of(name: str, value: Any, choices: Sequence[T], fix: str = "") -> T:
    """``value`` is one of ``choices``."""
    if isinstance(value, bool) or value not in choices:
        extra = f"; {fix}" if fix else ""
        raise ConfigError(f"{name} must be one of {tuple(choices)}, got {got(value)}{extra}")
    return value


def window(name: str, value: Any) -> tuple[int, int]:
    """A window size: an int ``w >= 0`` (``w`` keys on each side) or a pair ``(before, after)`` of ints >= 0."""
    pair = (value, value) if is_number(value) else value
    if not (isinstance(pair, tuple) and len(pair) == 2 and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pair
    )):
        raise ConfigError(
            f"{name} must be an int w >= 0 (w keys on each side) or a pair (before, after) of ints >= 0, got "
            f"{got(value)}; e.g. {name}=256, or {name}=(511, 0) for a causal window of 512"
        )
    return pair[0], pair[1]


def instance(
    name: str, value: Any, kind: type[T], expected: str, fix: str, error: type[AttnLabError] = ConfigError
) -> T:
    """``value`` is an instance of ``kind`` (described as ``expected``)."""
    if not isinstance(value, kind):
        raise error(f"{name} must be {expected}, got {type(value).__name__}; {fix}")
    return value
