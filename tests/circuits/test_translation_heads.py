"""Head patching on a transformer translator (attnlab.circuits.translation) and `attnlab circuit --discover --task
dates-year`: the prompt pairs differ in the year alone, a patched head equals a hand-made patch of the layer's output
(through the attention's own per-head outputs, not the output projection's input), heads that cannot see the source
have no effect, all cross-attention heads together carry all of it, and the model is left as it was."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import torch
from helpers.cli import one_error_line

from attnlab.circuits.translation import dates_year_pairs, patch_translator_heads, translator_heads
from attnlab.cli import main
from attnlab.data import date_split
from attnlab.kinds import Model


@pytest.fixture(scope="module")
def translator():  # type: ignore[no-untyped-def]
    return Model.load("dates-zh/transformer").loaded


def test_the_pairs_differ_in_the_year_alone_and_are_held_out(translator) -> None:  # type: ignore[no-untyped-def]
    pairs = dates_year_pairs(translator, 24, seed=3)
    assert len(pairs) == 24 and pairs.clean.shape == pairs.corrupt.shape
    tok = translator.tokenizer
    for b, (src, _) in enumerate(pairs.texts):
        differ = torch.nonzero(pairs.clean[b] != pairs.corrupt[b]).flatten().tolist()
        assert differ == sorted(pairs.year_source[b].tolist())  # the four year digits differ, nothing else
        tokens = tok.source_tokens(src)
        year = "".join(tokens[i] for i in pairs.year_source[b].tolist())
        assert len(year) == 4 and year.isdigit() and year in src and year[:2] in ("19", "20")
        written = tok.decode_target(pairs.tgt_in[b].tolist())
        assert written.startswith(year)  # the decoder reads the clean target, the year first
        assert [str(tok.target_tokens([t])[0]) for t in pairs.targets[b].tolist()] == list(year)
        assert (pairs.targets[b] != pairs.distractors[b]).all()
        day = translator.translate([src], warn=False)[0].text  # the model's own reading of the held-out date
        iso = f"{day[:4]}-{int(day[5:day.index('月')]):02d}-{int(day[day.index('月') + 1:day.index('日')]):02d}"
        assert date_split(dt.date.fromisoformat(iso)) == "test"
    again = dates_year_pairs(translator, 24, seed=3)
    assert torch.equal(again.clean, pairs.clean) and torch.equal(again.corrupt, pairs.corrupt)


def test_a_patched_head_is_the_hand_made_patch_of_its_layer_output(translator) -> None:  # type: ignore[no-untyped-def]
    model = translator.model
    pairs = dates_year_pairs(translator, 6, seed=1)
    found = patch_translator_heads(model, pairs)
    heads = translator_heads(model)
    name, attn, h = next(x for x in heads if x[0] == "x1.2")

    def per_head(src: torch.Tensor) -> torch.Tensor:  # (B, H, T, Dv): the attention's own per-head outputs
        got: list[torch.Tensor] = []
        detach = attn.attn_hook.attach(lambda call: got.append(call.heads), weights=False)
        try:
            with torch.no_grad():
                model(src, pairs.tgt_in)
        finally:
            detach()
        return got[-1]

    clean, corrupt = per_head(pairs.clean), per_head(pairs.corrupt)
    d = clean.shape[-1]
    w = attn.out_proj.weight[:, h * d:(h + 1) * d]  # (M, Dv)
    delta = (corrupt[:, h] - clean[:, h]) @ w.T  # (B, T, M): what the head's change adds to the layer's output

    def add(module: torch.nn.Module, args: object, output: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        return (output[0] + delta, *output[1:])

    handle = attn.register_forward_hook(add)
    try:
        with torch.no_grad():
            logits = model(pairs.clean, pairs.tgt_in).double()[:, list(pairs.positions)]
    finally:
        handle.remove()
    metric = (logits.gather(-1, pairs.targets[..., None]) - logits.gather(-1, pairs.distractors[..., None]))[..., 0]
    i = found.heads.index(name)
    assert float(metric.mean()) == pytest.approx(found.m_patched[i], abs=1e-4)
    assert found.m_patched[i] != pytest.approx(found.m_clean, abs=1e-3)  # the patch did something


def test_what_cannot_see_the_source_does_nothing_and_the_cross_heads_carry_it_all(
        translator) -> None:  # type: ignore[no-untyped-def]
    model = translator.model
    pairs = dates_year_pairs(translator, 8, seed=2)
    before = model(pairs.clean, pairs.tgt_in).detach()
    was = {id(a): dict(a.out_proj._forward_pre_hooks) for _, a, _ in translator_heads(model)}
    for ablation in ("mean", "resample"):  # another prompt's heads: their own targets, so every head may matter
        found = patch_translator_heads(model, pairs, ablation=ablation)
        assert all(lo <= e <= hi for e, lo, hi in zip(found.effect, found.low, found.high, strict=True))
    found = patch_translator_heads(model, pairs)
    assert all(lo <= e <= hi for e, lo, hi in zip(found.effect, found.low, found.high, strict=True))
    effect = dict(zip(found.heads, found.effect, strict=True))
    # decoder layer 0's self-attention reads the target's embeddings alone, the same in the corrupted run
    assert all(abs(effect[f"d0.{h}"]) < 1e-9 for h in range(4))
    assert any(abs(effect[f"d1.{h}"]) > 1e-4 for h in range(4))  # layer 1's reads the cross-attention's output
    assert effect["all decoder cross-attention"] == pytest.approx(1.0, abs=1e-9)  # then the decoder sees the corrupted
    assert found.heads[found.ranked()[0]].startswith("x")
    assert all(0 <= v["on_year"] <= 1 and 0 <= v["aligned"] <= v["on_year"] + 1e-9 for v in found.attention.values())
    assert torch.equal(model(pairs.clean, pairs.tgt_in).detach(), before) and not model.training
    assert {id(a): dict(a.out_proj._forward_pre_hooks) for _, a, _ in translator_heads(model)} == was


def test_the_command_writes_the_figure_and_every_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["circuit", "--discover", "--model", "dates-zh/transformer", "--task", "dates-year", "--prompts", "8",
                 "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["circuit.png", "discovery.json"]
    js = json.loads((out / "discovery.json").read_text(encoding="utf-8"))
    assert js["model"] == "dates-zh/transformer" and js["prompts"] == 8 and len(js["heads"]) == 24 + 3
    assert all(h["ci95"][0] <= h["effect"] <= h["ci95"][1] for h in js["heads"])
    said = capsys.readouterr().out
    assert "24 heads, each patched (corrupt)" in said and "decoder cross-attention 100.0%" in said


@pytest.mark.parametrize("argv,says", [
    (["--model", "dates-zh"], "has no encoder and decoder layers of heads"),
    (["--model", "zh-lm"], "zh-lm is a language model"),
    (["--model", "dates-zh/transformer", "--method", "eap"], "--method does not apply to dates-year"),
    (["--model", "dates-zh/transformer", "--prompts", "1"], "at least 2"),
])
def test_bad_input_is_one_line_and_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   argv: list[str], says: str) -> None:
    out = tmp_path / "out"
    assert main(["circuit", "--discover", "--task", "dates-year", *argv, "--out", str(out)]) == 2
    assert says in one_error_line(capsys, "circuit")
    assert not out.exists()
