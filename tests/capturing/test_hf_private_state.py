"""The one piece of transformers' private state capture relies on, checked against the installed version.

capture() switches a model's attention by setting ``config._attn_implementation_internal``
(``attnlab.capturing._hf.switch_implementation``). If a transformers release renames or reinterprets
it, these tests fail and say which version did.
"""

from __future__ import annotations

from contextlib import ExitStack

import pytest
import torch
import transformers
from transformers import BertConfig, BertModel

from attnlab.capturing import _hf
from attnlab.errors import CaptureError

VERSION = f"transformers {transformers.__version__}"


def tiny_bert() -> BertModel:
    config = BertConfig(vocab_size=31, hidden_size=12, num_hidden_layers=1, num_attention_heads=3,
                        intermediate_size=20, max_position_embeddings=16)
    return BertModel(config).eval()


def test_the_private_attribute_exists_and_drives_the_public_one():
    model = tiny_bert()
    assert hasattr(model.config, _hf._PRIVATE_IMPLEMENTATION), (
        f"{VERSION}: configs no longer have {_hf._PRIVATE_IMPLEMENTATION!r}; capturing/_hf.py must change"
    )
    before = model.config._attn_implementation
    with ExitStack() as undo:
        _hf.switch_implementation(model.config, "eager", undo)
        assert model.config._attn_implementation == "eager", (
            f"{VERSION}: setting {_hf._PRIVATE_IMPLEMENTATION!r} no longer changes config._attn_implementation"
        )
    assert model.config._attn_implementation == before, f"{VERSION}: the switch was not undone"


def test_the_switch_reaches_the_attention_modules():
    """Under the capture implementation the model's forward calls attnlab's function, once per layer."""
    model = tiny_bert()
    calls = []
    _hf._register()
    original = _hf._attention

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    from transformers.modeling_utils import AttentionInterface

    AttentionInterface.register(_hf.IMPLEMENTATION, counting)
    try:
        with ExitStack() as undo, torch.no_grad():
            _hf.switch_implementation(model.config, _hf.IMPLEMENTATION, undo)
            model(torch.tensor([[1, 2, 3]]))
    finally:
        AttentionInterface.register(_hf.IMPLEMENTATION, original)
    assert calls == [1], f"{VERSION}: the attention modules did not call the switched implementation ({calls})"


def test_a_config_without_the_attribute_is_a_clear_error():
    with ExitStack() as undo, pytest.raises(CaptureError, match=r"transformers \S+ keeps no"):
        _hf.switch_implementation(object(), _hf.IMPLEMENTATION, undo)
