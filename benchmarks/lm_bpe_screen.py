"""The sub-word lever of issue 42: zh-lm's recipe on byte-pair tokens instead of characters, bits per *character*.

    OMP_NUM_THREADS=1 PYTHONHASHSEED=0 PYTHONPATH=src python benchmarks/lm_bpe_screen.py \
        --config configs/zh-lm.json --steps 1500 --vocab 8000 --out RUN [--resume]

The same People's Daily splits as `attnlab train lm --data peoples-daily` (by document hash), each read as the
character model reads it (a character seen fewer than twice in train is one placeholder, as it is [UNK] there); a
BPE of ``--vocab`` tokens is trained with `tokenizers` on the training split only (punctuation and white space kept
as tokens of their own, never merged across), and the recipe's model, schedule and copy windows run through the same
training runtime (`attnlab.training`), with ``--steps`` steps and ``context`` now counted in tokens.  Validation
scores every token but the first of consecutive windows, as for characters, and divides the summed loss by the
characters those tokens spell: the metric is valid bits per character, so `benchmarks/lm_routes.py` puts the run
beside a character run at equal CPU seconds.  No n-gram mixture (its n-gram is over characters).  The run's folder
holds what `attnlab train lm` writes (the model, metrics.jsonl, final.json) and the tokenizer, ``bpe.json``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from attnlab.data import lm_documents, lm_tokenizer, split_documents
from attnlab.models.lm import CausalLM, LMConfig
from attnlab.training import LMTask, LMTrainConfig, Result, seed_everything, start_run

SPLITS = ("train", "valid", "test")
LOG2E = 1 / math.log(2)  # bits per nat


def bpe(train: str, size: int) -> Tokenizer:
    """A byte-pair tokenizer of ``size`` tokens trained on ``train``: every character of it in the alphabet,
    punctuation and white space isolated (never inside a merge)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\p{P}\s]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    alphabet = sorted(set(train))
    tok.train_from_iterator(train.splitlines(keepends=True), trainers.BpeTrainer(
        vocab_size=max(size, len(alphabet)), min_frequency=2, initial_alphabet=alphabet, limit_alphabet=len(alphabet),
        show_progress=False))
    return tok


class BPETask(LMTask):
    """The character task on token ids: the loss per token, the metric bits per character of the text scored."""

    chars: dict[str, int]  # characters spelt by the scored tokens (every token but the first) of each split

    def evaluate(self) -> tuple[float, float, int]:
        loss, _, n, self.positions = self.score("valid")
        bpc = loss * n / self.chars["valid"] * LOG2E
        return loss, -bpc, n

    def finish(self, state: dict[str, Any]) -> Result:
        test_loss, _, n, _ = self.score("test")
        final = {"valid_bits_per_char": -state["best"],
                 "test_bits_per_char": test_loss * n / self.chars["test"] * LOG2E,
                 "test_tokens": n, "test_characters": self.chars["test"], "best_step": state["best_step"],
                 "steps": state["step"], "vocabulary": self.model.config.vocab_size,
                 "train_cpu_s": round(state["cpu_s"], 2), "train_wall_s": round(state["wall_s"], 2),
                 "chars_per_token": self.run["bpe"]["chars_per_token"]}
        return Result(final, {}, "run.json", self.run, f"BPE {final['vocabulary']}: valid "
                      f"{final['valid_bits_per_char']:.3f} bits/char")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=Path("configs/zh-lm.json"))
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)
    recipe = json.loads(args.config.read_text(encoding="utf-8"))
    train = {**recipe["train"], "max_steps": args.steps, "eval_every": 250, "checkpoint_every": 250,
             "ngram_mix": False}
    config = LMTrainConfig(**train)
    run = {"data": recipe["data"], "model": recipe["model"], "train": config.to_dict(), "bpe_vocab": args.vocab}
    with start_run(args.out, run, config, resume=args.resume) as opened:
        say = opened.open_log()
        splits = split_documents(lm_documents(recipe["data"]))
        chars = lm_tokenizer(splits.train, config.min_frequency)
        text = {name: chars.read_as(getattr(splits, name)) for name in SPLITS}  # as the character model reads it
        tok = bpe(text["train"], args.vocab)
        tok.save(str(args.out / "bpe.json"))
        ids: dict[str, np.ndarray] = {}
        spelt: dict[str, int] = {}
        for name in SPLITS:
            encoded = tok.encode(text[name])
            assert "".join(encoded.tokens) == text[name], f"the BPE does not spell the {name} split back"
            ids[name] = np.asarray(encoded.ids, dtype=np.int64)
            spelt[name] = len(text[name]) - len(encoded.tokens[0])  # the characters of every token but the first
        per_token = len(text["train"]) / len(ids["train"])
        opened.run["bpe"] = {"vocab": tok.get_vocab_size(), "chars_per_token": round(per_token, 4),
                             "tokens": {name: len(ids[name]) for name in SPLITS}}
        say(f"BPE of {tok.get_vocab_size()} tokens on train: {per_token:.3f} characters a token; "
            f"tokens train {len(ids['train']):,}, valid {len(ids['valid']):,}, test {len(ids['test']):,}")
        seed_everything(config.seed)
        net = CausalLM(LMConfig(vocab_size=tok.get_vocab_size(), **recipe["model"]))
        task = BPETask(splits, ids, chars, net, config, opened.run, opened.w, say)
        task.chars = spelt
        runtime = opened.runtime(task)
        say(f"model: {sum(p.numel() for p in net.parameters()):,} parameters, context {net.config.context} tokens; "
            f"{runtime.total} steps of {config.batch_size} windows, {torch.get_num_threads()} thread(s)")
        final = runtime.loop()
        say(json.dumps(final))


if __name__ == "__main__":
    main()
