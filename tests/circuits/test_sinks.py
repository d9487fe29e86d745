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
