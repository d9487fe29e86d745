"""Using a trained translator: load it by bundled name or from a run folder, translate with the alignment."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._bundled import locate
from ..data import collate
from ..errors import InputError, ModelLoadError, TooLongError
from ._translate_run import model_config

__all__ = ["Translation", "Translator", "bundle_translator", "load_translator", "translator_folder"]


@dataclass(frozen=True)
class Translation:
    """One translated text: the output, its tokens on both sides and the alignment ``(T, S)`` between them."""

    source: str
    text: str
    source_tokens: list[str]  # S labels: the source's tokens and [EOS]
    target_tokens: list[str]  # T labels: the generated tokens (no BOS, no EOS)
    alignment: torch.Tensor  # (T, S) float32: row i is where the model looked while generating token i
    score: float
    ids: list[int]  # the T generated target ids (no BOS, no EOS)


@dataclass
class Translator:
    """A trained translator with its tokenizer; :meth:`translate` runs it."""

    model: nn.Module
    tokenizer: Any
    meta: dict[str, str]
    name: str

    @property
    def max_length(self) -> int:
        return int(model_config(self.model).max_length)

    @property
    def run(self) -> dict[str, Any]:
        return dict(json.loads(self.meta.get("run", "{}")))

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Source ids (EOS appended); an empty text is an InputError, a too long one a TooLongError naming both
        lengths, and characters the model never saw are mapped to [UNK] with a warning."""
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"the text to translate is empty (got {text!r}); give some text")
            n = len(self.tokenizer.source_tokens(text))  # [EOS] included
            if n > self.max_length:
                raise TooLongError(f"the input is {n} tokens long (with [EOS]) but the model {self.name!r} takes at "
                                   f"most {self.max_length}; shorten the text", n_tokens=n, limit=self.max_length)
            unknown = list(dict.fromkeys(self.tokenizer.unknown_source(text)))
            if unknown:
                shown = "".join(unknown[:20]) if all(len(u) == 1 for u in unknown) else " ".join(unknown[:20])
                warnings.warn(f"{len(unknown)} character(s) or token(s) the model {self.name!r} never saw in "
                              f"training ({shown!r}) are read as [UNK]; the translation may be wrong", UserWarning,
                              stacklevel=2)
        return [list(ids) for ids in self.tokenizer.encode_source(list(texts), self.max_length)]

    @torch.no_grad()
    def translate(self, texts: Sequence[str], *, beam: int = 1) -> list[Translation]:
        """Translate ``texts`` (greedy, or beam search with ``beam`` hypotheses), one batch."""
        ids = self.encode(texts)
        self.model.eval()
        pad = int(model_config(self.model).pad_id)
        gen = self.model.generate(collate(ids, torch.device("cpu"), pad), beam=beam)  # type: ignore[operator]
        out = []
        for i, text in enumerate(texts):
            tokens = list(gen.tokens[i])
            weights = gen.alignment[i].detach().float().cpu()  # (T, S_i)
            src = self.tokenizer.source_tokens(text)  # [EOS] last
            out.append(Translation(text, self.tokenizer.decode_target(tokens), src[: weights.shape[1]],
                                   list(self.tokenizer.target_tokens(tokens))[: weights.shape[0]], weights,
                                   float(gen.scores[i]), tokens))
        return out


def translator_folder(model: str | os.PathLike[str]) -> Path:
    """The model folder of a translator: a bundled name's, a run folder's best model (else its newest checkpoint), or
    a model folder itself; :func:`attnlab.locate` decides, and refuses anything that is not a translator."""
    return locate(model, "translator").path


def load_translator(model: str | os.PathLike[str]) -> Translator:
    """A :class:`Translator` (CPU, eval mode) from a bundled name (``"dates-zh"``, ``"tutorial-en-zh"``), a run
    folder, a checkpoint folder or a model folder."""
    from ..data import PairTokenizer
    from ..models import load_seq2seq

    folder = translator_folder(model)
    net, meta = load_seq2seq(folder)
    try:
        tokenizer = PairTokenizer.from_json(meta["tokenizer"])
    except (KeyError, ValueError) as exc:
        raise ModelLoadError(f"the model at {str(folder)!r} lacks its tokenizer ({exc}); train it again") from None
    net = net.float().eval()
    return Translator(net, tokenizer, meta, str(model))


BUNDLE_FILES = ("tokenizer.json", "final.json", "run.json", "train.log", "curves.png")


def bundle_translator(run: str | os.PathLike[str], dest: str | os.PathLike[str], *, dtype: str = "float16"
                      ) -> dict[str, Any]:
    """Copy the best model of the run folder ``run`` into ``dest`` with its weights stored in ``dtype`` (float16,
    bfloat16 or float32), with the run's log, final.json and curves; check that the stored weights translate as
    well: the exact match of the stored model on every test set of final.json goes into ``dest/bundled.json``."""
    import shutil

    from ..models import load_seq2seq, save_seq2seq
    from ._translate_run import exact_match, load_task

    check_dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
    if dtype not in check_dtype:
        raise InputError(f"dtype must be one of {sorted(check_dtype)}, got {dtype!r}")
    src, dest = Path(run), Path(dest)
    model, meta = load_seq2seq(src)
    dest.mkdir(parents=True, exist_ok=True)
    save_seq2seq(dest, model.to(check_dtype[dtype]), meta)
    for name in BUNDLE_FILES:
        if (src / name).is_file():
            shutil.copyfile(src / name, dest / name)
    stored = load_translator(dest)
    final = json.loads((src / "final.json").read_text(encoding="utf-8"))
    runinfo = json.loads(meta["run"])
    splits = load_task(runinfo["data"], runinfo.get("data_options"))
    sets = {"test": splits.test, **splits.extra}
    report: dict[str, Any] = {"dtype": dtype, "sets": {}}
    for name, pairs in sets.items():
        res = exact_match(stored.model, stored.tokenizer, pairs, max_length=int(runinfo["max_length"]))
        report["sets"][name] = {"stored": res["exact_match"], "float32": final["sets"][name]["exact_match"],
                                "n": res["n"]}
    report["bytes"] = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    (dest / "bundled.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report
