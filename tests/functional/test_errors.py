"""Bad input to the kernels raises an attnlab error naming the argument, what it got and the fix."""

from __future__ import annotations

import pytest
import torch

import attnlab as al
from attnlab.errors import AttnLabError, ConfigError, DeviceError, DTypeError, MaskError, ShapeError

q = torch.randn(2, 3, 7, 13)
k = torch.randn(2, 3, 5, 13)
v = torch.randn(2, 3, 5, 11)

CASES = [
    # (kwargs overriding q/k/v/options, error type, words the message must contain)
    (dict(q=torch.randn(13)), ShapeError, ["q", "(13,)"]),
    (dict(k=torch.randn(2, 3, 5, 12)), ShapeError, ["q", "k", "13", "12"]),
    (dict(v=torch.randn(2, 3, 6, 11)), ShapeError, ["k", "v", "5", "6"]),
    (dict(k=torch.randn(2, 4, 5, 13), v=torch.randn(2, 4, 5, 11)), ShapeError, ["leading", "(2, 3)", "(2, 4)"]),
    (dict(k=torch.randn(3, 5, 13), v=torch.randn(3, 5, 11)), ShapeError, ["same number of dims"]),
    (dict(q=q.double()), DTypeError, ["dtype", "float64", "float32"]),
    (dict(q=q.long()), DTypeError, ["q", "floating", "int64"]),
    (dict(q=q.tolist()), DTypeError, ["q", "list"]),
    (dict(q=q.to("meta")), DeviceError, ["device", "meta", ".to(device)"]),
    (dict(mask=torch.ones(7, 4, dtype=torch.bool)), MaskError, ["mask", "(7, 4)", "(2, 3, 7, 5)"]),
    (dict(mask=torch.ones(2, 5, dtype=torch.bool)), MaskError, ["mask", "mask[:, None, None, :]"]),
    (dict(mask=torch.ones(7, 5, dtype=torch.int64)), MaskError, ["mask", "int64", "mask.bool()"]),
    (dict(mask=[[True] * 5] * 7), MaskError, ["mask", "list"]),
    (dict(mask=torch.ones(4, 2, 3, 7, 5, dtype=torch.bool)), MaskError, ["mask", "(4, 2, 3, 7, 5)"]),
    (dict(temperature=0.0), ConfigError, ["temperature", "0.0", "> 0"]),
    (dict(temperature=-1.0), ConfigError, ["temperature", "sharpens"]),
    (dict(temperature=float("nan")), ConfigError, ["temperature"]),
    (dict(scale=0.0), ConfigError, ["scale", "1/sqrt(d_k)"]),
    (dict(dropout=1.0), ConfigError, ["dropout", "[0, 1)"]),
    (dict(dropout=-0.1), ConfigError, ["dropout"]),
]


@pytest.mark.parametrize("override,exc,words", CASES, ids=[f"{i}-{c[1].__name__}" for i, c in enumerate(CASES)])
def test_bad_input(override, exc, words):
    args = dict(q=q, k=k, v=v) | override
    with pytest.raises(exc) as info:
        al.attention(args.pop("q"), args.pop("k"), args.pop("v"), **args)
    assert isinstance(info.value, AttnLabError)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} missing from: {msg}"


def test_errors_are_also_builtin_types():
    with pytest.raises(ValueError):
        al.attention(q, k, v, temperature=0)
    with pytest.raises(TypeError):
        al.attention(q.long(), k, v)


def test_unknown_kernel_name():
    with pytest.raises(ConfigError, match="unknown attention kernel 'nope'"):
        al.functional.get_kernel("nope")
