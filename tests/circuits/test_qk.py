"""QK attribution (attnlab.circuits.qk_attribution): the table of query-side x key-side sources sums to the
head's own score to 1e-6 in float64 (with LayerNorms and MLPs, with rotary positions); on induction-2l the
induction head's attention to the token after the earlier copy is carried by the key side's previous-token head
and the query side's token embedding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab import locate
from attnlab.circuits import qk_attribution
from attnlab.circuits.induction import induction_inputs
from attnlab.errors import InputError
from attnlab.models.lm import CausalLM, LMConfig, load_lm


def lm(mlp: bool, norm: bool) -> CausalLM:
    torch.manual_seed(1)
    model = CausalLM(LMConfig(vocab_size=11, context=16, d_model=12, n_heads=3, n_layers=3, mlp=mlp,
                              norm=norm)).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model


@pytest.mark.parametrize("mlp,norm", [(True, True), (False, False), (True, False)])
def test_the_table_sums_to_the_score(mlp: bool, norm: bool) -> None:
    model = lm(mlp, norm)
    ids = torch.randint(0, 11, (9,), generator=torch.Generator().manual_seed(0))
    for layer, head, q, k in [(0, 0, 5, 2), (1, 2, 8, 8), (2, 1, 7, 0)]:
        r = qk_attribution(model, ids, layer, head, q, k)
        assert abs(r.table.sum() + r.mask_bias - r.score) < 1e-6
        assert r.table.shape == (len(r.sources),) * 2 and r.sources[-1] == "bias"
        expected = 1 + layer * (3 + mlp)  # embed, the earlier heads and MLPs
        assert len(r.sources) == expected + 1
    assert "frozen" in r.norm if norm else r.norm == "none"
    assert r.positions.startswith("rotary")


def test_bad_positions_and_heads_are_refused() -> None:
    model = lm(False, False)
    ids = torch.arange(1, 6)
    with pytest.raises(InputError, match="positions"):
        qk_attribution(model, ids, 0, 0, 5, 1)
    with pytest.raises(InputError, match="does not exist"):
        qk_attribution(model, ids, 3, 0, 1, 1)
    with pytest.raises(InputError, match="query 1 does not see key 3: a causal model's query"):
        qk_attribution(model, ids, 0, 0, 1, 3)


def test_on_induction_2l_the_previous_token_head_on_the_key_side_carries_the_induction_head() -> None:
    """Over 8 prompts, the induction head L1H0's score at (a repeated-half query, the token after the earlier copy
    of the current token): the largest mean term is the query side's token embedding x the key side's previous-token
    head L0H0, and the key side's two previous-token heads carry more than half of the score."""
    model, _ = load_lm(locate("induction-2l").path)
    model = model.double()
    x = induction_inputs(65, 20, 8, seed=1)
    tables, scores = [], []
    for row in range(8):
        i = 20 + 3 + row
        r = qk_attribution(model, x.clean[row], 1, 0, i, i - 19)
        assert abs(r.table.sum() - r.score) < 1e-6
        key_side = r.table.sum(0)
        assert r.sources[int(key_side.argmax())] in ("0.0", "0.2")  # a previous-token head, every prompt
        tables.append(r.table)
        scores.append(r.score)
    mean = np.mean(tables, 0)
    a, b = np.unravel_index(int(mean.argmax()), mean.shape)
    assert (r.sources[a], r.sources[b]) == ("embed", "0.0")
    prev = [r.sources.index("0.0"), r.sources.index("0.2")]
    assert mean[:, prev].sum() > 0.5 * np.mean(scores)
