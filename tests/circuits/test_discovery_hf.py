"""Circuit discovery on Hugging Face causal language models (tiny GPT-2 and Llama from tests/helpers/hf_models, float64;
Llama with grouped-query attention): the graph, the masked forward at its two ends, EAP against exact patching's
derivative, a figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import hf_models

from attnlab.circuits import PromptPairs, Task, eap, graph_of, masked_forward, sender_outputs
from attnlab.circuits._discover import alternative

pytest.importorskip("transformers")


def pairs() -> PromptPairs:
    g = torch.Generator().manual_seed(0)
    clean, corrupt = torch.randint(1, 40, (3, 7), generator=g), torch.randint(1, 40, (3, 7), generator=g)
    targets = torch.randint(1, 40, (3, 2), generator=g)
    return PromptPairs("toy", clean, corrupt, (5, 6), targets, (targets % 39) + 1, 0)


TASK = Task("toy", "random pairs", lambda m, n, s: pairs())


@pytest.mark.parametrize("arch,edges,eps,tol", [("gpt2", 110, 1e-5, 1e-6), ("llama", 82, 3e-3, 1e-3)])
def test_discovery_runs_on_hugging_face_models(arch: str, edges: int, eps: float, tol: float, tmp_path: Path) -> None:
    """Llama's RMSNorm computes in float32 whatever the model's dtype, so its derivative is taken over a wider step
    and compared more loosely."""
    model = hf_models.model(arch)  # 2 layers, 4 heads; llama: 2 key/value heads
    g = graph_of(model)
    assert g.n_edges == edges
    if arch == "llama":  # each shared key/value head is one receiver: "L.kvG"
        assert "0.1 -> 1.kv0.k" in g.names and "0.1 -> 1.0.k" not in g.names and "0.1 -> 1.3.q" in g.names
    p = pairs()
    with torch.no_grad():
        plain = masked_forward(g, model, p.clean, check=True).output
        assert torch.allclose(plain, model(p.clean).logits, atol=1e-10)
        alt = sender_outputs(g, model, p.corrupt)
        every = masked_forward(g, model, p.clean, alt, torch.ones(1, g.n_edges, dtype=torch.float64)).output
        assert torch.allclose(every, model(p.corrupt).logits, atol=1e-9)
    scores = eap(model, p, TASK, n_boot=10)
    _, alt = alternative(g, model, p, "corrupt")
    for e in range(0, g.n_edges, 9):
        w = torch.zeros(2, g.n_edges, dtype=torch.float64)
        w[0, e], w[1, e] = eps, -eps
        with torch.no_grad():
            out = masked_forward(g, model, p.clean, alt, w).output
        fd = ((TASK.metric(out[:3], p) - TASK.metric(out[3:], p)) / (2 * eps)).numpy()
        np.testing.assert_allclose(scores.per_prompt[:, e], fd, atol=tol, rtol=0)
    from attnlab.circuits.discovery_figures import circuit_figure
    from attnlab.viz import save

    save(circuit_figure(g, scores.mean, np.abs(scores.mean) >= np.quantile(np.abs(scores.mean), 0.8)),
         tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 1000
