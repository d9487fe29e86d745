"""Discovery tasks as plain Python: a generator of clean/corrupted prompt pairs and a per-prompt metric.

A :class:`Task` makes :class:`PromptPairs` (``task.prompts(model, n, seed)``); every pair has the same length in
one set, and the metric is read at ``positions``: by default the logit difference between what the clean prompt
should predict there (``targets``) and the corrupted prompt's answer (``distractors``), averaged over the
positions, one value per prompt (:func:`logit_diff_per_prompt`), so that every result can carry a bootstrap
interval over prompts.  Built in (:data:`TASKS`):

* ``induction`` (induction-2l, or any character language model): ``clean = S S``, ``corrupt = R S`` of random
  tokens (L = 20 by default), the metric on the repeated half, the same inputs as
  :func:`attnlab.circuits.induction.induction_inputs`.
* ``zh-contrast`` (zh-sentiment): ``A，但是B`` with ``B`` a drawback (the verdict negative) against the same
  sentence with ``B`` a merit of the same length (the corruption flips B's polarity); ``A`` praise; of 8 praises x
  8 clauses those of the commonest length (42), drawn without replacement; the metric the classifier's
  ``logit[neg] - logit[pos]``.
* ``zh-induction`` (zh-lm, a character language model that reads Chinese): induction on real text: ``X`` 20
  characters of a held-out People's Daily document (the corpus's test split, never trained on), ``Y`` the 20 that
  follow it; ``clean = X X``, ``corrupt = Y X`` (a repeated phrase against a fresh one), the metric the logit of
  the next character of ``X`` against ``Y``'s at the same offset, on the second half.

Write your own by building a :class:`Task` with a ``make(model, n, seed) -> PromptPairs`` function;
:func:`task_named` gives a task the loaded model's :class:`attnlab.kinds.TextModel` (its tokenizer) when it needs
one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ._model import anatomy

__all__ = ["TASKS", "PromptPairs", "Task", "induction_task", "logit_diff_per_prompt", "rows_of", "task_named",
           "zh_contrast_task", "zh_induction_task"]


@dataclass(frozen=True)
class PromptPairs:
    """``clean`` and ``corrupt`` ``(B, T)`` token ids, and the metric's ``positions``, ``targets`` and
    ``distractors`` ``(B, P)``."""

    task: str
    clean: Tensor
    corrupt: Tensor
    positions: tuple[int, ...]
    targets: Tensor
    distractors: Tensor
    seed: int

    def __post_init__(self) -> None:
        if self.clean.shape != self.corrupt.shape or self.clean.dim() != 2:
            raise InputError(f"clean and corrupted prompts must be (B, T) of one shape; got "
                             f"{tuple(self.clean.shape)} and {tuple(self.corrupt.shape)}")
        if self.targets.shape != (self.clean.shape[0], len(self.positions)) or \
                self.distractors.shape != self.targets.shape:
            raise InputError("targets and distractors must be (B, P): one per prompt and position")

    def __len__(self) -> int:
        return int(self.clean.shape[0])

    def take(self, rows: Tensor | list[int]) -> PromptPairs:
        r = torch.as_tensor(rows, dtype=torch.long)
        return PromptPairs(self.task, self.clean[r], self.corrupt[r], self.positions, self.targets[r],
                           self.distractors[r], self.seed)

    def digest(self) -> str:
        """sha256 of the prompts, positions, targets and distractors: the manifest's prompts' hash."""
        h = hashlib.sha256()
        for t in (self.clean, self.corrupt, self.targets, self.distractors):
            h.update(t.to(torch.int64).contiguous().numpy().tobytes())
        h.update(repr(self.positions).encode())
        return h.hexdigest()


def rows_of(output: Tensor, pairs: PromptPairs) -> Tensor:
    """``(B, P, V)`` a language model's output rows at the task's positions; a classifier's ``(B, C)`` as one row."""
    return output[:, None, :] if output.dim() == 2 else output[:, list(pairs.positions)]


def logit_diff_per_prompt(logits: Tensor, pairs: PromptPairs) -> Tensor:
    """``(B,)`` the mean over ``pairs.positions`` of ``logit[target] - logit[distractor]`` (a classifier's output
    ``(B, C)``: its one row)."""
    rows = rows_of(logits, pairs)  # (B, P, V)
    t, d = pairs.targets.to(rows.device), pairs.distractors.to(rows.device)
    return (rows.gather(-1, t[..., None]) - rows.gather(-1, d[..., None]))[..., 0].mean(1)


@dataclass(frozen=True)
class Task:
    """A named prompt-pair generator and its per-prompt metric (higher = the clean behaviour)."""

    name: str
    description: str
    make: Callable[[nn.Module, int, int], PromptPairs]
    metric: Callable[[Tensor, PromptPairs], Tensor] = logit_diff_per_prompt
    metric_name: str = "logit difference (target - distractor), mean over the task's positions"

    def prompts(self, model: nn.Module, n: int, seed: int = 0) -> PromptPairs:
        if n < 2:
            raise InputError(f"a task needs at least 2 prompts (for its interval), got {n}")
        return self.make(model, n, seed)


def _induction(length: int) -> Callable[[nn.Module, int, int], PromptPairs]:
    def make(model: nn.Module, n: int, seed: int) -> PromptPairs:
        from .induction import induction_inputs

        a = anatomy(model)
        if a.unembed is None:
            raise InputError("the induction task needs a language model (its next-token logits)")
        x = induction_inputs(int(a.unembed.shape[0]), length, n, seed=seed, low=1)
        return PromptPairs("induction", x.clean, x.corrupt, tuple(x.positions), x.targets, x.distractors, seed)

    return make


def induction_task(length: int = 20) -> Task:
    """``S S`` against ``R S`` of ``length`` random tokens each (ids from 1: [UNK] never drawn)."""
    return Task("induction", f"clean S S, corrupt R S: {length} random tokens repeated; the metric on the "
                f"repeated half", _induction(length))


def zh_induction_task(text_model: Any, length: int = 20) -> Task:
    """Induction on held-out People's Daily text (module docstring); ``text_model`` encodes the characters."""

    def make(model: nn.Module, n: int, seed: int) -> PromptPairs:
        from ..data import lm_documents, split_documents

        if text_model is None or not hasattr(text_model, "encoder"):
            raise InputError("the zh-induction task needs the model's tokenizer: load it with load_text_model")
        skip = getattr(text_model, "skip", None)
        docs = [d for d in split_documents(lm_documents("peoples-daily")).test.split("\n") if len(d) > 2 * length]
        rng = np.random.default_rng(seed)
        clean, corrupt, targets, distractors = [], [], [], []
        for i in rng.permutation(len(docs)):
            doc = docs[int(i)]
            at = int(rng.integers(0, len(doc) - 2 * length))
            x = [int(t) for t in text_model.encoder.encode(doc[at:at + length])]
            y = [int(t) for t in text_model.encoder.encode(doc[at + length:at + 2 * length])]
            if len(x) != length or len(y) != length or (skip is not None and skip in x + y) or x == y:
                continue  # a character it does not know, or a run that repeats itself
            clean.append(x + x)
            corrupt.append(y + x)
            targets.append(x[1:])
            distractors.append(y[1:])
            if len(clean) == n:
                break
        if len(clean) < n:
            raise InputError(f"the held-out text gave {len(clean)} usable pairs of {n}; ask for fewer --prompts")
        return PromptPairs("zh-induction", torch.tensor(clean), torch.tensor(corrupt),
                           tuple(range(length, 2 * length - 1)), torch.tensor(targets), torch.tensor(distractors),
                           seed)

    return Task("zh-induction", f"clean X X, corrupt Y X: {length} characters of held-out People's Daily text and "
                f"the {length} that follow them; the metric on the repeated half", make)


PRAISES = ("这本书写得很好", "这家店环境不错", "手机外观很漂亮", "服务员态度热情", "酒店位置很方便", "电影画面很精美",
            "衣服款式很好看", "饭菜分量很足")
CLAUSES = (("太贵了", "很便宜"), ("质量很差", "质量很好"), ("物流太慢", "物流很快"), ("味道一般", "味道很棒"),
           ("屏幕太暗", "屏幕很亮"), ("不太好用", "非常好用"), ("隔音太差", "隔音很好"), ("电池不耐用", "电池很耐用"))


def zh_contrast_task(text_model: Any) -> Task:
    """``A，但是B`` (B a drawback) against ``A，但是B'`` (B' a merit of the same length) for a sentiment classifier."""

    def make(model: nn.Module, n: int, seed: int) -> PromptPairs:
        if text_model is None or "neg" not in getattr(text_model, "outputs", ()) or "pos" not in text_model.outputs:
            raise InputError("the zh-contrast task needs a sentiment classifier with labels neg and pos "
                             "(zh-sentiment), loaded with load_text_model")
        encode = text_model.encoder.encode
        combos = []  # (clean ids, corrupt ids) of every praise x clause whose two sentences encode to one length
        for a in PRAISES:
            for neg_, pos_ in CLAUSES:
                c, k = ([int(t) for t in encode(f"{a}，但是{b}")] for b in (neg_, pos_))
                if len(c) == len(k):
                    combos.append((c, k))
        lengths = [len(c) for c, _ in combos]
        common = max(set(lengths), key=lengths.count)  # one length for the batch: the commonest
        combos = [ck for ck in combos if len(ck[0]) == common]
        if n > len(combos):
            raise InputError(f"the zh-contrast task has {len(combos)} sentences of one length; ask for at most that "
                             f"many --prompts")
        rng = np.random.default_rng(seed)
        picked = [combos[int(i)] for i in rng.choice(len(combos), n, replace=False)]
        clean, corrupt = [c for c, _ in picked], [k for _, k in picked]
        neg, pos = text_model.outputs.index("neg"), text_model.outputs.index("pos")
        return PromptPairs("zh-contrast", torch.tensor(clean), torch.tensor(corrupt), (0,),
                           torch.full((n, 1), neg), torch.full((n, 1), pos), seed)

    return Task("zh-contrast", "clean A，但是B (B a drawback), corrupt A，但是B' (B' a merit of the same length)", make,
                metric_name="logit[neg] - logit[pos] of the classifier")


TASKS: dict[str, Callable[[Any], Task]] = {"induction": lambda _tm: induction_task(),
                                           "zh-contrast": zh_contrast_task, "zh-induction": zh_induction_task}


def task_named(name: str, text_model: Any = None) -> Task:
    """The built-in task ``name`` (:data:`TASKS`), given the model's TextModel where the task needs a tokenizer."""
    if name not in TASKS:
        raise InputError(f"unknown task {name!r}; the tasks are {', '.join(sorted(TASKS))}")
    return TASKS[name](text_model)


def describe(task: Task) -> dict[str, Any]:
    return {"name": task.name, "description": task.description, "metric": task.metric_name}
