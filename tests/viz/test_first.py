"""One first view for every surface (issue 29, item 7): heatmap.png's defaults, the viewer's payload, the lab, and a
comparison that opens on the layer where two traces differ most."""

from __future__ import annotations

import pytest
import torch

import attnlab as al
from attnlab.capturing import AttentionRecord, AttentionTrace
from attnlab.viz.html import payload

LAYERS, HEADS, N = 3, 2, 5


def _softmax(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g), dim=-1)


def _trace(seed: int = 0, kinds: tuple[str, ...] = ("self",), changed: int | None = None) -> AttentionTrace:
    """``LAYERS`` records of each kind (5 tokens, 2 heads); with ``changed`` the records of that layer draw from
    another seed, so only that layer differs from the trace of the same ``seed``."""
    toks = [f"t{i}" for i in range(N)]
    records = [AttentionRecord(f"{kind}.{layer}", kind, layer,  # type: ignore[arg-type]
                               _softmax(1, HEADS, N, N, seed=seed + layer + (100 if layer == changed else 0)),
                               toks, toks)
               for kind in kinds for layer in range(LAYERS)]
    return AttentionTrace(records, {"model": "tiny"})


def _tv_reference(a: AttentionTrace, b: AttentionTrace) -> torch.Tensor:
    """Total variation per (layer, head), float64, by loops."""
    out = torch.zeros(LAYERS, HEADS, dtype=torch.float64)
    for layer in range(LAYERS):
        wa, wb = a.records[layer].weights[0].double(), b.records[layer].weights[0].double()
        for h in range(HEADS):
            out[layer, h] = sum(0.5 * float((wa[h, i] - wb[h, i]).abs().sum()) for i in range(N)) / N
    return out


def test_the_first_view_is_the_last_layer_and_the_mean_of_its_heads() -> None:
    assert (al.viz.FIRST_LAYER, al.viz.FIRST_HEAD) == (-1, "mean")
    assert al.viz.first_view(_trace()) == {"kind": "self", "layer": LAYERS - 1, "head": -1}
    # a translator without encoder self-attention opens on its cross-attention; a decoder on its causal attention
    assert al.viz.first_view(_trace(kinds=("cross",)))["kind"] == "cross"
    assert al.viz.first_view(_trace(kinds=("causal", "cross")))["kind"] == "causal"


def test_heatmap_png_uses_the_first_view() -> None:
    from attnlab.cli import build_parser

    args = build_parser().parse_args(["show", "some text"])
    assert (int(args.layer), args.head) == (al.viz.FIRST_LAYER, al.viz.FIRST_HEAD)


@pytest.mark.parametrize("changed", [0, 1, 2])
def test_a_comparison_opens_where_the_traces_differ_most(changed: int) -> None:
    a, b = _trace(), _trace(changed=changed)
    d = al.viz.difference(a, b)
    ref = _tv_reference(a, b)
    assert torch.allclose(torch.tensor(d["tv"], dtype=torch.float64), ref, atol=1e-5), (d["tv"], ref)
    assert ref.mean(1).argmax().item() == changed
    assert al.viz.first_view(a, b)["layer"] == changed
    doc = payload([a, b])
    assert [p["first"] for p in doc["panes"]] == [{"kind": "self", "layer": changed, "head": -1}] * 2


def test_traces_that_cannot_be_compared_open_on_the_first_view_and_say_why() -> None:
    a = _trace()
    short = AttentionTrace([AttentionRecord(r.name, r.kind, r.layer, _softmax(1, HEADS, 4, 4, seed=r.layer))
                            for r in a.records], {})
    d = al.viz.difference(a, short)
    assert d["tv"] is None and "5 and 4 tokens" in d["reason"]
    assert al.viz.first_view(a, short)["layer"] == LAYERS - 1
    assert "no self attention" in al.viz.difference(a, _trace(kinds=("cross",)))["reason"]
    assert al.viz.first_view(a, _trace())["layer"] == LAYERS - 1  # identical: no layer differs, the first view


def test_the_single_payload_carries_the_first_view() -> None:
    t = _trace(kinds=("self", "cross"))
    assert payload(t)["first"] == al.viz.first_view(t)
