"""Attention sinks (attnlab.circuits.attention_sinks): the shares and norms on a model whose first position is
made a sink by hand, and the bundled induction-2l (no sink heads)."""

from __future__ import annotations

import pytest
import torch

from attnlab import locate
from attnlab.circuits import attention_sinks
from attnlab.circuits.induction import induction_inputs
from attnlab.errors import InputError
from attnlab.models.lm import CausalLM, LMConfig, load_lm


def test_shares_and_ratios_are_what_they_say() -> None:
    torch.manual_seed(0)
    model = CausalLM(LMConfig(vocab_size=9, context=16, d_model=8, n_heads=2, n_layers=1, mlp=False,
                              norm=False)).double().eval()
    ids = torch.randint(1, 9, (3, 6))
    ids[:, 0] = 0
    with torch.no_grad():
        model.embed.weight[0] *= 0  # token 0 has a zero embedding: its value is only the bias
    rows = attention_sinks(model, ids, delimiters=[0])
    assert len(rows) == 2
    for r in rows:
        assert r.delimiter_share is not None
        assert 0 < r.first_share < 1 and abs(r.delimiter_share - r.first_share) < 1e-12  # the one delimiter: pos 0
        assert r.value_norm_ratio < 0.5  # a zero embedding writes only the value bias
        assert r.write_share < r.first_share
        assert r.to_json()["sink_head"] == r.sink
    assert attention_sinks(model, ids)[0].delimiter_share is None
    with pytest.raises(InputError, match="T >= 2"):
        attention_sinks(model, ids[:, :1])


def test_induction_2l_has_no_sink_heads() -> None:
    model, _ = load_lm(locate("induction-2l").path)
    rows = attention_sinks(model, induction_inputs(65, 20, 8, seed=2).clean)
    assert len(rows) == 8 and not any(r.sink for r in rows)
    assert all(r.first_share < 0.1 for r in rows)


def test_value_norms_kept_from_a_run_are_attention_sinks_ratios() -> None:
    """What each value writes, kept from the run that captures the attention (attnlab analyze, the lab), equals
    attention_sinks' ratio on the same ids: a language model's one pass, its writing (the prompt's pass, then one
    cached step per character), MiniLM's BERT; a classifier's long text read in windows is refused, saying why."""
    import numpy as np

    from attnlab.circuits import model_value_norms, text_model
    from attnlab.kinds import Model

    lm = Model.load("zh-lm")
    tm = text_model(lm)
    text = "中国人民，中国。"
    ids, _ = tm.encode(text, "given")
    with model_value_norms(lm, text) as kept:
        trace = lm.spec.analysis_trace(lm, text)
    assert trace.select(kind="causal")[0].weights.shape[-1] == ids.shape[1]
    want = np.array([r.value_norm_ratio for r in attention_sinks(tm.model, ids)]).reshape(4, 4)
    np.testing.assert_allclose(kept.first_value_ratio(ids.shape[1]), want, rtol=1e-9)

    with model_value_norms(lm, text) as kept:
        written = lm.run(text, max_tokens=6, greedy=True)
    n = written.traced.select(kind="causal")[0].weights.shape[-1]
    assert n == ids.shape[1] + 5  # the last character written is never read
    full = torch.tensor([[*ids[0].tolist(), *tm.encoder.encode(written.output["continuation"][:5])]])
    want = np.array([r.value_norm_ratio for r in attention_sinks(tm.model, full)]).reshape(4, 4)
    np.testing.assert_allclose(kept.first_value_ratio(n), want, rtol=1e-5)

    minilm = Model.load("minilm")
    with model_value_norms(minilm, "The cat sat.") as kept:
        minilm.run("The cat sat.")
    net = minilm.spec.forward(minilm, "The cat sat.").net
    x = minilm.loaded[1]("The cat sat.", return_tensors="pt")["input_ids"]
    want = np.array([r.value_norm_ratio for r in attention_sinks(net, x)]).reshape(6, 12)
    np.testing.assert_allclose(kept.first_value_ratio(x.shape[1]), want, rtol=1e-9)
    assert (want[1:] < 0.2).mean() > 0.9  # [CLS], where most of its heads look, writes little (docs/analysis.md)

    clf = Model.load("zh-sentiment")
    with model_value_norms(clf, "好" * 300) as kept:
        clf.run("好" * 300)
    with pytest.raises(InputError, match="overlapping windows"):
        kept.first_value_ratio(301)
