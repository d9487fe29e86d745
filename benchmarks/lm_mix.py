"""A trained language model mixed per character with the Kneser-Ney n-gram of its run (what `attnlab train lm
--ngram-mix` reports at the end of a run), for a model trained without the option, e.g. the zh-lm bundled before.

    PYTHONPATH=src python benchmarks/lm_mix.py src/attnlab/_bundled/zh-lm

Reads the model and its run.json (the data and the n-gram's chosen order), rebuilds the same split and vocabulary,
scores every character of valid and test but the first as the run does (consecutive windows of the context), fits
the n-gram on train, picks lambda on valid and prints one JSON line; the model's valid figure is printed beside the
run's own final.json figure as a check that the characters and windows are the run's.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.data import CharTokenizer, lm_documents, split_documents
from attnlab.models.kneser_ney import KneserNey, bits_per_token
from attnlab.models.lm import load_lm
from attnlab.training import fit_mixture, mixture


@torch.no_grad()
def char_log2_probs(model: torch.nn.Module, ids: np.ndarray, context: int) -> np.ndarray:
    """``(T - 1,)`` log2 P of characters 1 .. T - 1 of ``ids``, in consecutive windows of ``context``."""
    t = torch.from_numpy(ids)
    out = []
    for s in range(0, len(ids) - 1, context * 64):
        stop = min(s + context * 64, len(ids) - 1)
        starts = list(range(s, stop, context))
        full = [w for w in starts if w + context <= len(ids) - 1]
        if full:
            index = torch.tensor(full)[:, None] + torch.arange(context)  # (B, L)
            logits = model(t[index]).float()  # (B, L, V)
            nll = F.cross_entropy(logits.transpose(1, 2), t[index + 1], reduction="none")  # (B, L)
            out.append((-nll / math.log(2)).double().numpy().reshape(-1))
        for w in starts[len(full):]:  # the last, shorter window
            x, y = t[w: len(ids) - 1][None], t[w + 1:][None]
            nll = F.cross_entropy(model(x).float()[0], y[0], reduction="none")
            out.append((-nll / math.log(2)).double().numpy())
    return np.concatenate(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="a run's folder or a bundle (model, run.json, final.json)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, meta = load_lm(args.folder)
    run = json.loads((args.folder / "run.json").read_text(encoding="utf-8"))
    final = json.loads((args.folder / "final.json").read_text(encoding="utf-8"))
    vocab = CharTokenizer.from_json(meta["tokenizer"])
    splits = split_documents(lm_documents(run["data"]))
    ids = {name: np.asarray(vocab.encode(getattr(splits, name)), dtype=np.int64) for name in ("train", "valid", "test")}
    order = int(run["ngram"]["chosen_order"])
    ngram = KneserNey.fit(ids["train"], order, len(vocab))
    ours = {k: char_log2_probs(model, ids[k], model.config.context) for k in ("valid", "test")}
    theirs = {k: ngram.log2_probs(ids[k])[1:] for k in ("valid", "test")}
    lam, mix_valid = fit_mixture(ours["valid"], theirs["valid"])
    print(json.dumps({"model": str(args.folder), "valid_bits_per_char": bits_per_token(ours["valid"]),
                      "final_json_valid": final["valid_bits_per_char"], "test_bits_per_char": bits_per_token(
                          ours["test"]), "ngram_valid": bits_per_token(theirs["valid"]),
                      "ngram_test": bits_per_token(theirs["test"]), "mix_lambda": lam,
                      "mix_valid_bits_per_char": mix_valid,
                      "mix_test_bits_per_char": mixture(ours["test"], theirs["test"], lam)}))


if __name__ == "__main__":
    main()
