"""The shared checks of attnlab._validate, and the cases where hand-written checks used to disagree."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab import _validate as check
from attnlab import masks
from attnlab.errors import AttnLabError, ConfigError, DeviceError, DTypeError, MaskError, ShapeError
from attnlab.functional import attention_stats, linear_attention, local_attention, orthogonal_random_features


def message(call) -> str:
    with pytest.raises(AttnLabError) as info:
        call()
    return str(info.value)


# --- numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -3, True, False, 1.5, "3", None, [2]])
def test_positive_int_refuses(bad):
    with pytest.raises(ConfigError) as info:
        check.positive_int("heads", bad)
    msg = str(info.value)
    assert msg.startswith("heads must be an int >= 1") and repr(bad) in msg and "e.g. heads=1" in msg


def test_positive_int_says_a_bool_is_not_a_number_and_takes_optional_none():
    assert "a bool" in message(lambda: check.positive_int("n", True))
    assert check.positive_int("n", None, optional=True) is None
    assert check.positive_int("n", 7) == 7
    assert "or None" in message(lambda: check.positive_int("n", 0, optional=True))


@pytest.mark.parametrize("bad", [-1, True, 0.0, "0"])
def test_non_negative_int(bad):
    assert check.non_negative_int("w", 0) == 0
    with pytest.raises(ConfigError, match=r"^w must be an int >= 0"):
        check.non_negative_int("w", bad)


@pytest.mark.parametrize("bad", [1.0, -0.1, math.nan, math.inf, True, "0.1", None])
def test_probability(bad):
    assert check.probability("dropout", 0) == 0 and check.probability("dropout", 0.5) == 0.5
    with pytest.raises(ConfigError, match=r"dropout must be a number in \[0, 1\)") as info:
        check.probability("dropout", bad)
    assert "use 0.0 for no dropout" in str(info.value)
    with pytest.raises(ConfigError, match=r"copy_share must be a number in \[0, 1\), got .*; 0 turns it off$"):
        check.probability("copy_share", bad, fix="0 turns it off")  # a share that is no dropout says its own fix


@pytest.mark.parametrize("bad", [1.01, -0.1, math.nan, math.inf, True, "0.5", None])
def test_share(bad):
    assert check.share("stop_at", 0) == 0 and check.share("stop_at", 1.0) == 1.0  # both ends included
    with pytest.raises(ConfigError, match=r"^stop_at must be a share in \[0, 1\], got .*; 0 turns it off$"):
        check.share("stop_at", bad)


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, True, "1"])
def test_positive_float(bad):
    assert check.positive_float("eps", 1e-6) == 1e-6 and check.positive_float("eps", 2) == 2
    with pytest.raises(ConfigError, match=r"^eps must be a finite number > 0"):
        check.positive_float("eps", bad)
    assert check.positive_float("scale", None, optional=True) is None


def test_one_of_and_boolean():
    assert check.one_of("score", "dot", ("dot", "general")) == "dot"
    msg = message(lambda: check.one_of("score", "cosine", ("dot", "general"), fix="see the docs"))
    assert "score" in msg and "'cosine'" in msg and "('dot', 'general')" in msg and "see the docs" in msg
    with pytest.raises(ConfigError, match="a bool"):
        check.one_of("n", True, (1, 2))  # True == 1, but a bool is not the number 1
    assert check.boolean("flag", False, "what True does") is False
    with pytest.raises(ConfigError, match=r"flag must be True or False \(what True does\), got 'yes'"):
        check.boolean("flag", "yes", "what True does")
    with pytest.raises(ConfigError):
        check.boolean("flag", 1, "what True does")


@pytest.mark.parametrize("good,pair", [(3, (3, 3)), (0, (0, 0)), ((2, 0), (2, 0)), ((0, 5), (0, 5))])
def test_window_accepts(good, pair):
    assert check.window("window", good) == pair


@pytest.mark.parametrize("bad", [True, -1, 2.0, "3", (1,), (1, 2, 3), (-1, 2), (1, True), [1, 2], None])
def test_window_refuses(bad):
    msg = message(lambda: check.window("window", bad))
    assert msg.startswith("window must be an int w >= 0") and "e.g. window=256" in msg


def test_indices():
    assert check.indices("idx", [3, 0, 1]).tolist() == [3, 0, 1]
    assert check.indices("idx", torch.tensor([[1], [2]], dtype=torch.int32)).dtype == torch.long
    assert check.indices("idx", []).numel() == 0
    for bad in ([-1], [0.5], [True], "ab", [[1, 2], [3]]):
        with pytest.raises(ConfigError, match="idx must be a list of ints >= 0"):
            check.indices("idx", bad)
    with pytest.raises(ConfigError, match=r"in \[0, 4\)"):
        check.indices("idx", [4], below=4)
    with pytest.raises(ConfigError, match="non-empty"):
        check.indices("idx", [], nonempty=True)


def test_instance_raises_the_error_type_asked():
    assert check.instance("x", 3, int, "an int", "fix it") == 3
    with pytest.raises(MaskError, match="x must be an int, got str; fix it"):
        check.instance("x", "3", int, "an int", "fix it", MaskError)


# --- tensors ---------------------------------------------------------------------------------------


def test_tensor_checks():
    with pytest.raises(DTypeError, match=r"x must be a torch.Tensor of shape \(batch, seq\), got list"):
        check.tensor("x", [1, 2], "(batch, seq)")
    with pytest.raises(ShapeError, match=r"for one sequence use x\[None\]"):
        check.ndim("x", torch.zeros(3), 2, "(batch, seq)")
    check.ndim("x", torch.zeros(1, 2, 3), 2, "(..., seq, dim)", at_least=True)
    with pytest.raises(MaskError):
        check.ndim("m", torch.zeros(3), 2, "(batch, seq)", error=MaskError)
    with pytest.raises(DTypeError, match="x must be a floating tensor"):
        check.floating("x", torch.zeros(2, dtype=torch.int64))
    assert check.boolean_tensor("m", torch.tensor([0, 1]), "True = keep", "fix").dtype == torch.bool
    with pytest.raises(MaskError, match="m must be bool"):
        check.boolean_tensor("m", torch.zeros(2), "True = keep", "fix")


def test_qkv_names_what_disagrees():
    q = torch.zeros(2, 3, 5, 4)
    check.qkv(q, q, torch.zeros(2, 3, 5, 6))  # only d_v may differ
    with pytest.raises(DTypeError, match=r"q, k and v must have the same dtype, got q torch.float32, k torch.float64"):
        check.qkv(q, q.double(), q)
    with pytest.raises(ShapeError, match="feature size"):
        check.qkv(q, torch.zeros(2, 3, 5, 3), q)
    with pytest.raises(ShapeError, match="sequence length"):
        check.qkv(q, q, torch.zeros(2, 3, 4, 4))
    with pytest.raises(DTypeError, match="k must be a floating tensor"):
        check.qkv(q, q.long(), q)
    with pytest.raises(ShapeError, match="v must have shape"):
        check.qkv(q, q, torch.zeros(4))
    if torch.cuda.is_available():
        with pytest.raises(DeviceError):
            check.qkv(q, q.cuda(), q)


def test_kernel_options():
    check.kernel_options(None, 1.0, 0.0)
    for scale, temperature, dropout, word in [(0, 1.0, 0.0, "scale"), (None, math.inf, 0.0, "temperature"),
                                              (None, 1.0, True, "dropout"), (True, 1.0, 0.0, "scale")]:
        with pytest.raises(ConfigError, match=word):
            check.kernel_options(scale, temperature, dropout)


def test_key_padding():
    assert check.key_padding(torch.ones(2, 3, dtype=torch.int64), 2, 3).dtype == torch.bool
    with pytest.raises(MaskError, match=r"\(batch, k_len\) = \(2, 4\)"):
        check.key_padding(torch.ones(2, 3, dtype=torch.bool), 2, 4)
    with pytest.raises(MaskError, match=r"mask=\.\.\. instead"):
        check.key_padding(torch.ones(2, 3), 2, 3)


# --- the cases that used to disagree ----------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: masks.window(True),
    lambda: masks.window(2, True),
    lambda: masks.window(2, dilation=True),
    lambda: masks.strided(True),
    lambda: masks.bigbird(block=True),
    lambda: masks.bigbird(block=4, window=True),
    lambda: masks.bigbird(block=4, seed=1.5),
])
def test_masks_refuse_bools_as_ints(make):
    with pytest.raises(ConfigError, match=r"a bool|got 1\.5"):
        make()


def test_window_true_message_names_the_argument_and_the_fix():
    msg = message(lambda: masks.window(True))
    assert msg.startswith("window before must be an int >= 0, got True (a bool")
    assert "window(2)" in msg


def test_masks_still_take_what_they_took():
    assert masks.window(2, 0, dilation=2).materialize(5, 5).sum() > 0
    assert masks.bigbird(block=2, window=0, global_blocks=0, random_blocks=0).materialize(4, 4).int().sum() == 8
    assert masks.global_tokens(torch.tensor([0])).materialize(3, 3).all(dim=-1)[..., 0].item()
    assert masks.padding(torch.tensor([2, 3])).batch_size == 2
    with pytest.raises(ConfigError, match="padding lengths"):
        masks.padding([1.5])  # used to be truncated to 1 silently


def test_num_features_is_checked_by_its_own_name():
    msg = message(lambda: orthogonal_random_features(0, 4))
    assert msg.startswith("num_features must be an int >= 1, got 0") and "tile" not in msg
    assert message(lambda: orthogonal_random_features(8, True)).startswith("dim must be an int >= 1, got True")


def test_kernel_arguments_refuse_bools_and_non_finite_numbers():
    q = torch.randn(1, 6, 4)
    with pytest.raises(ConfigError, match=r"^window must be"):
        local_attention(q, q, q, window=True)
    with pytest.raises(ConfigError, match=r"^dilation must be"):
        local_attention(q, q, q, window=1, dilation=True)
    with pytest.raises(ConfigError, match=r"^global_tokens must be a list of ints in \[0, 6\)"):
        local_attention(q, q, q, window=1, global_tokens=[6])
    with pytest.raises(ConfigError, match=r"^top_k must be"):
        attention_stats(q, q, top_k=True)
    with pytest.raises(ConfigError, match=r"feature_map must be one of \('elu', 'relu'\)"):
        linear_attention(q, q, q, feature_map="tanh")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=5), st.lists(st.integers(0, 3), max_size=5))
def test_broadcasts_to_is_torchs_broadcast_rule(shape: list[int], target: list[int]) -> None:
    """``broadcasts_to(shape, target)`` is ``torch.broadcast_shapes(shape, target) == target`` (without its import
    of torch's symbolic shapes)."""
    try:
        expected = torch.broadcast_shapes(torch.Size(shape), torch.Size(target)) == torch.Size(target)
    except RuntimeError:
        expected = False
    assert check.broadcasts_to(shape, target) == expected
