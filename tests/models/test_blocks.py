"""The one reading of a model's blocks (attnlab.models.blocks) and its two views: circuits' anatomy and
attribution's layer_parts agree on every model both read, and the Hugging Face blocks are read as circuits read
them before."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnlab.analysis.attribution import layer_parts
from attnlab.circuits import anatomy
from attnlab.errors import InputError
from attnlab.models import AttentionClassifier, ClassifierConfig, LMConfig
from attnlab.models.bert import BertConfig, BertEncoder
from attnlab.models.blocks import read_blocks
from attnlab.models.lm import CausalLM


def _own(which: str) -> tuple[nn.Module, list[nn.Module]]:
    """A small model of attnlab's and its blocks where circuits found them before the one reading."""
    if which.startswith("lm"):
        mlp, norm = {"lm": (True, True), "lm-no-norm": (True, False), "lm-attention-only": (False, False)}[which]
        lm = CausalLM(LMConfig(vocab_size=9, context=8, d_model=8, n_heads=2, n_layers=2, mlp=mlp, norm=norm))
        return lm, list(lm.blocks)
    if which.startswith("classifier"):
        clf = AttentionClassifier(ClassifierConfig(vocab_size=9, d_model=8, n_heads=2, n_layers=2, max_length=8,
                                                   norm_first=which.endswith("pre"), pooling="attention"))
        assert clf.encoder is not None
        return clf, list(clf.encoder.layers)
    bert = BertEncoder(BertConfig(vocab_size=9, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=10, max_position_embeddings=8, type_vocab_size=2,
                                  layer_norm_eps=1e-12))
    return bert, list(bert.encoder.layer)


@pytest.mark.parametrize("which", ["lm", "lm-no-norm", "lm-attention-only", "classifier-pre", "classifier-post",
                                   "bert"])
def test_anatomy_and_layer_parts_are_one_reading(which: str) -> None:
    model, blocks = _own(which)
    layers, parts = anatomy(model).layers, layer_parts(model)
    assert [x.block for x in layers] == [p.block for p in parts] == blocks  # the same blocks, in the same order
    for layer, p in zip(layers, parts, strict=True):
        assert layer.attention is p.attention is layer.attn  # attnlab's MultiHeadAttention, read as it is
        assert layer.attn.out_proj is p.output and layer.attn.v_proj is p.value
        assert layer.attn.n_heads == p.n_heads
        if layer.mlp is None:  # attention only: no stream between two sublayers; attribution reads the block's output
            assert layer.mid is None and p.mixed is p.block and p.mixed_is_output
        else:  # the stream between the sublayers is where attribution reads the attention sublayer's result
            assert layer.mid is p.mixed and layer.mid_is_output == (p.post_norm is not None)
        assert layer.pre_norm == (p.post_norm is None)


def test_a_decoder_layer_is_read_with_its_cross_attention() -> None:
    from attnlab.layers import TransformerDecoderLayer

    layer = TransformerDecoderLayer(8, 2, 10, norm_first=True)
    (block,) = read_blocks(layer)
    assert block.family == "attnlab" and block.attention is layer.self_attn and block.cross is layer.cross_attn
    assert block.mixed is layer.norm2 and not block.mixed_is_output  # x + SA(LN(x)) enters the cross-attention's norm


def test_hugging_face_blocks() -> None:
    transformers = pytest.importorskip("transformers")
    from helpers import hf_models

    gpt2 = hf_models.model("gpt2")
    blocks = read_blocks(gpt2)
    assert [b.block for b in blocks] == list(gpt2.transformer.h) and {b.family for b in blocks} == {"hf-gpt2"}
    attn, m = gpt2.transformer.h[0].attn, gpt2.config.n_embd
    q, k, v, out = blocks[0].weights()  # views of c_attn's (in, 3M) and c_proj's (in, out) weights, transposed
    for i, view in enumerate((q, k, v)):
        assert torch.equal(view.weight, attn.c_attn.weight[:, i * m:(i + 1) * m].T)
        assert torch.equal(view.bias, attn.c_attn.bias[i * m:(i + 1) * m])
        assert view.weight.data_ptr() == attn.c_attn.weight[:, i * m].data_ptr()  # a view, not a copy
    assert torch.equal(out.weight, attn.c_proj.weight.T) and blocks[0].fused
    with pytest.raises(InputError, match="no attention layer"):  # attribution reads no causal Hugging Face LM
        layer_parts(gpt2)

    llama = hf_models.model("llama")
    blocks = read_blocks(llama)
    assert [b.block for b in blocks] == list(llama.model.layers) and {b.family for b in blocks} == {"hf-llama"}
    first = llama.model.layers[0]
    assert (blocks[0].n_heads, blocks[0].n_kv_heads) == (4, 2) and not blocks[0].fused
    assert blocks[0].weights()[1].weight is first.self_attn.k_proj.weight
    assert blocks[0].mixed is first.post_attention_layernorm and blocks[0].norm is first.input_layernorm

    bert = transformers.BertModel(transformers.BertConfig(vocab_size=13, hidden_size=12, num_attention_heads=3,
                                                          num_hidden_layers=2, intermediate_size=10))
    blocks = read_blocks(bert)
    assert [b.block for b in blocks] == list(bert.encoder.layer) and {b.family for b in blocks} == {"hf-bert"}
    assert [p.output for p in layer_parts(bert)] == [x.attention.output.dense for x in bert.encoder.layer]
    with pytest.raises(InputError, match="circuits"):  # circuits reads no Hugging Face encoder
        anatomy(bert)
