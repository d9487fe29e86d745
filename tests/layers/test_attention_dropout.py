"""TransformerConfig.attention_dropout: the efficient kernels (no weights to drop out) train with dropout > 0."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.functional import KERNELS
from attnlab.layers import TransformerConfig, TransformerEncoder
from attnlab.layers._config import kernel_takes_dropout


def test_which_kernels_drop_out_weights() -> None:
    state = torch.get_rng_state()
    takes = {name for name in KERNELS if kernel_takes_dropout(name)}
    assert torch.equal(torch.get_rng_state(), state)  # asking runs nothing: seeded runs stay as they were
    assert takes == {"dense", "memory_efficient"}
    assert "ring" in KERNELS  # registered by attnlab.parallel like every kernel, not a side door of the layers


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_kernel_declares_what_it_does(name: str) -> None:
    """The registry's declarations are read, never probed; here the kernels are run to show that each is true."""
    spec = KERNELS[name]
    q = k = v = torch.randn(1, 2, 5, 4)  # (B, H, L, D)

    def refuses(**kwargs: object) -> bool:
        try:
            with torch.random.fork_rng(devices=[]):
                spec(q, k, v, **kwargs)
        except ConfigError:
            return True
        return False

    assert refuses(dropout=0.5) is not spec.dropout, f"{name}: declared dropout={spec.dropout}"
    assert refuses(return_weights=True) is not spec.weights, f"{name}: declared weights={spec.weights}"
    assert spec.options is not None
    assert refuses(no_such_option=1)
    if spec.options:
        with pytest.raises(ConfigError, match="it takes " + ", ".join(spec.options)):
            spec(q, k, v, no_such_option=1)


@pytest.mark.parametrize("kernel", ["local", "linear", "performer"])
def test_efficient_kernels_train_with_dropout(kernel: str) -> None:
    cfg = TransformerConfig(8, 2, 16, dropout=0.3, kernel=kernel)
    assert cfg.attention().dropout == 0.0  # nothing to drop out in the attention
    assert cfg.feed_forward().dropout == 0.3  # the rest keeps its dropout
    encoder = TransformerEncoder(cfg, 1).train()
    x = torch.randn(2, 5, 8, requires_grad=True)
    encoder(x, key_padding_mask=torch.tensor([[True] * 5, [True] * 3 + [False] * 2])).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_dense_keeps_its_attention_dropout_and_an_explicit_one_is_checked() -> None:
    assert TransformerConfig(8, 2, 16, dropout=0.3).attention().dropout == 0.3
    assert TransformerConfig(8, 2, 16, dropout=0.3, attention_dropout=0.0).attention().dropout == 0.0
    assert TransformerConfig(8, 2, 16, attention_dropout=0.2).attention().dropout == 0.2
    with pytest.raises(ConfigError, match="never builds"):
        TransformerConfig(8, 2, 16, kernel="local", attention_dropout=0.1)
    with pytest.raises(ConfigError, match="attention_dropout"):
        TransformerConfig(8, 2, 16, attention_dropout=1.5)
