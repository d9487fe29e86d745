"""benchmarks/lm_bpe_screen.py, the sub-word screen of issue 42: its tokenizer spells every split back, and the bits
per character it reports are the saved model's summed token loss over the characters those tokens spell, computed
here again with a direct forward pass."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from attnlab.data import lm_documents, lm_tokenizer, split_documents
from attnlab.models.lm import load_lm

from .test_lm import TINY_MODEL, TINY_TRAIN, write_text

# the script, loaded from its file (benchmarks/ on sys.path would shadow libraries: it holds a kernels.py, and
# subprocesses that copy sys.path would inherit it)
_SPEC = importlib.util.spec_from_file_location("lm_bpe_screen", Path(__file__).resolve().parents[2] / "benchmarks"
                                               / "lm_bpe_screen.py")
assert _SPEC is not None and _SPEC.loader is not None
lm_bpe_screen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(lm_bpe_screen)


def test_the_tokenizer_spells_the_text_back_and_keeps_punctuation_apart() -> None:
    text = "中国人民，中国人民。\n经济发展，经济发展。\n" * 20
    tok = lm_bpe_screen.bpe(text, 60)
    encoded = tok.encode(text)
    assert "".join(encoded.tokens) == text
    assert len(encoded.tokens) < len(text)  # merges happened
    assert not any(len(t) > 1 and any(c in "，。\n" for c in t) for t in encoded.tokens)


@pytest.mark.slow
def test_the_reported_bits_per_character_are_the_models(tmp_path: Path) -> None:
    text = write_text(tmp_path / "text.txt", paragraphs=300)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"data": str(text), "model": TINY_MODEL,
                                  "train": {**TINY_TRAIN, "copy_share": 0.25}}), encoding="utf-8")
    out = tmp_path / "run"
    lm_bpe_screen.main(["--config", str(config), "--steps", "4", "--vocab", "40", "--out", str(out)])
    final = json.loads((out / "final.json").read_text(encoding="utf-8"))
    assert final["steps"] == 4 and final["chars_per_token"] > 1

    splits = split_documents(lm_documents(str(text)))
    valid = lm_tokenizer(splits.train, TINY_TRAIN["min_frequency"]).read_as(splits.valid)
    encoded = Tokenizer.from_file(str(out / "bpe.json")).encode(valid)
    ids = torch.tensor(encoded.ids)
    model, _ = load_lm(out)
    model.eval()
    L, nats = TINY_MODEL["context"], 0.0
    with torch.no_grad():
        for start in range(0, len(ids) - 1, L):  # consecutive windows; every token but the first is scored
            x, y = ids[start: start + L], ids[start + 1: start + L + 1]
            x = x[: len(y)]
            nats += float(F.cross_entropy(model(x[None]).double()[0], y, reduction="sum"))
    chars = len(valid) - len(encoded.tokens[0])
    assert final["valid_bits_per_char"] == pytest.approx(nats / chars / math.log(2), rel=1e-5)
