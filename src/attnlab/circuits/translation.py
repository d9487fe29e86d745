"""Which heads of a transformer translator carry a part of the source into the output: exact patching of every
head, over a set of prompt pairs, with bootstrap intervals.

A translator is an encoder-decoder (:class:`attnlab.models.TransformerSeq2Seq`): its heads are the encoder's
self-attention heads (``e0.1``: encoder layer 0, head 1), the decoder's causal self-attention heads (``d0.1``) and
its cross-attention heads (``x0.1``), which read the encoded source.  Edge methods (EAP, ACDC) read the graph of a
decoder-only model (:mod:`attnlab.circuits._graph`); here each head is a node, patched exactly.

**The dates-year task** (:func:`dates_year_pairs`, on a model trained on ``attnlab train translate --data dates``):
a clean source is a held-out date (the test split of :mod:`attnlab.data`'s dates: never trained on) written in a
locale's format that does not name the weekday (``March 5, 2021``, ``05.03.2021``), the corrupted source the same
date in another year whose four digits all differ (``March 5, 1987``), so the two sources have one length and
differ only in the year.  Both runs read the clean target as the decoder's input (teacher forcing), and the metric
is read where the output writes the year: at each of its four digits, ``logit[clean digit] - logit[corrupted
digit]``, averaged over the four, one value per prompt.

**Patching a head** replaces its output (its slice of the attention's output-projection input, at every position)
in the clean run by the ablated one (the corrupted run's, the mean over the prompts' clean runs, or another prompt's
clean run), every other head left as it is; the head's **effect** is the share of the clean-minus-corrupted metric
it removes, ``(mean M_clean - mean M_patched) / (mean M_clean - mean M_corrupted)``, with a bootstrap 95% interval
over the prompts (the ratio recomputed on each resample).  Each kind's heads are also patched together (``all
decoder cross-attention``): what they carry between them.  For each cross-attention head the result also gives its
attention from the year's output positions: the share on the source's year digits, and the share on the very digit
being written (``aligned``): a head that copies the year looks at it.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError

__all__ = ["TRANSLATION_TASKS", "HeadPatching", "TranslationPairs", "dates_year_pairs", "patch_translator_heads",
           "translator_heads"]

YEAR_DIGITS = 4
WEEKDAY = "星期"  # a Chinese target that ends with the weekday (星期五) came from a source that names it
KINDS = {"e": "encoder self-attention", "d": "decoder self-attention", "x": "decoder cross-attention"}


@dataclass(frozen=True)
class TranslationPairs:
    """``clean``/``corrupt`` sources ``(B, S)`` of one length, the decoder's input ``tgt_in`` ``(B, T)`` (the clean
    target, BOS first), the metric's output ``positions`` (P,), ``targets``/``distractors`` ``(B, P)`` and each
    source's year token positions ``year_source`` ``(B, P)`` (the digit written at ``positions[p]`` read from
    ``year_source[:, p]``)."""

    task: str
    clean: Tensor
    corrupt: Tensor
    tgt_in: Tensor
    positions: tuple[int, ...]
    targets: Tensor
    distractors: Tensor
    year_source: Tensor
    texts: tuple[tuple[str, str], ...]  # (clean source, corrupted source)
    seed: int

    def __len__(self) -> int:
        return int(self.clean.shape[0])


def _other_year(year: int, rng: random.Random) -> int:
    """A year of 1900-2049 whose four digits all differ from ``year``'s."""
    s = f"{year:04d}"
    century = "20" if s[:2] == "19" else "19"
    tens = [d for d in range(10) if str(d) != s[2] and (century == "19" or d <= 4)]
    ones = [d for d in range(10) if str(d) != s[3]]
    return int(f"{century}{rng.choice(tens)}{rng.choice(ones)}")


@cache
def _test_days() -> tuple[dt.date, ...]:
    """The dates of the dates task's test split (never trained on), 29 February left out (few years have it)."""
    from ..data import date_split

    first, last = dt.date(1900, 1, 1).toordinal(), dt.date(2049, 12, 31).toordinal()  # the task's years
    days = (dt.date.fromordinal(n) for n in range(first, last + 1))
    return tuple(d for d in days if (d.month, d.day) != (2, 29) and date_split(d) == "test")


def dates_year_pairs(translator: Any, n: int, seed: int = 0) -> TranslationPairs:
    """``n`` pairs of the dates-year task (module docstring) for a translator trained on the dates task
    (:class:`attnlab.trained.Translator`): one source length per set (the commonest among the drawn formats)."""
    from ..data import DATE_LOCALES, date_formats, date_pair

    if n < 2:
        raise InputError(f"a task needs at least 2 prompts (for its interval), got {n}")
    if not getattr(translator, "is_dates", False):
        raise InputError(f"the dates-year task reads a translator trained on dates (attnlab train translate --data "
                         f"dates); {getattr(translator, 'name', 'this model')} was trained on something else")
    rng = random.Random(seed)
    days = _test_days()
    tok, max_length = translator.tokenizer, translator.max_length
    by_length: dict[tuple[int, int], list[tuple[list[int], list[int], list[int], list[int], tuple[str, str]]]] = {}
    tries = 0
    while max((len(v) for v in by_length.values()), default=0) < n:
        tries += 1
        if tries > 200 * n:
            raise InputError(f"could not draw {n} date pairs of one length; ask for fewer prompts")
        day, locale = rng.choice(days), rng.choice(DATE_LOCALES)
        patterns = [p for _, p in date_formats(locale) if WEEKDAY not in date_pair(day, locale, p)[1]]
        if not patterns:
            continue
        pattern = rng.choice(patterns)
        other = day.replace(year=_other_year(day.year, rng))
        (src, tgt), (src2, tgt2) = date_pair(day, locale, pattern), date_pair(other, locale, pattern)
        year = f"{day.year:04d}"
        if src.count(year) != 1 or len(src) != len(src2) or not tgt.startswith(year) or not tgt2.startswith(
                f"{other.year:04d}"):
            continue
        ids, ids2 = tok.encode_source([src, src2], max_length)
        spans = tok.source_spans(src)
        at = src.index(year)
        where = [next((k for k, (a, b) in enumerate(spans) if a <= at + i < b), -1) for i in range(YEAR_DIGITS)]
        if len(ids) != len(ids2) or -1 in where or len({*where}) != YEAR_DIGITS:
            continue
        t_ids, t_ids2 = tok.encode_target([tgt, tgt2], max_length)
        digits = [t_ids[1 + i] for i in range(YEAR_DIGITS)] + [t_ids2[1 + i] for i in range(YEAR_DIGITS)]
        by_length.setdefault((len(ids), len(t_ids)), []).append((ids, ids2, t_ids[:-1], digits + where, (src, src2)))
    rows = max(by_length.values(), key=len)[:n]  # one source and one target length
    t = torch.tensor
    extra = t([r[3] for r in rows])  # (B, 3P): targets, distractors, source positions
    return TranslationPairs("dates-year", t([r[0] for r in rows]), t([r[1] for r in rows]), t([r[2] for r in rows]),
                            tuple(range(YEAR_DIGITS)), extra[:, :YEAR_DIGITS], extra[:, YEAR_DIGITS:2 * YEAR_DIGITS],
                            extra[:, 2 * YEAR_DIGITS:], tuple(r[4] for r in rows), seed)


def head_tag(name: str) -> str:
    """``"e"``, ``"d"`` or ``"x"`` of a head's name, or of a group's (``"all decoder cross-attention"``)."""
    if name.startswith("all "):
        return next(tag for tag, kind in KINDS.items() if kind == name[4:])
    return name[0]


def translator_heads(model: nn.Module) -> list[tuple[str, nn.Module, int]]:
    """``(name, attention layer, head)`` for every head of a transformer encoder-decoder: ``e`` encoder
    self-attention, ``d`` decoder self-attention, ``x`` cross-attention, then the layer and the head (the blocks as
    :func:`attnlab.models.blocks.read_blocks` reads them: a decoder block is one with a cross-attention)."""
    from ..models.blocks import read_blocks

    blocks = read_blocks(model)
    encoder = [b.attention for b in blocks if b.cross is None]
    decoder = [b for b in blocks if b.cross is not None]
    if not encoder or not decoder:
        raise InputError(f"head patching reads a transformer encoder-decoder such as dates-zh/transformer (attnlab "
                         f"train translate --arch transformer); this model ({type(model).__name__}) has no encoder "
                         f"and decoder layers of heads (a recurrent translator has one attention, its alignment: "
                         f"attnlab translate)")
    out: list[tuple[str, nn.Module, int]] = []
    crosses = [b.cross for b in decoder if b.cross is not None]
    for tag, attns in (("e", encoder), ("d", [b.attention for b in decoder]), ("x", crosses)):
        for i, attn in enumerate(attns):
            n: Any = getattr(attn, "n_heads", 0)
            out += [(f"{tag}{i}.{h}", attn, h) for h in range(int(n))]
    return out


def _metric(logits: Tensor, pairs: TranslationPairs) -> Tensor:
    """``(B,)``: ``logit[target] - logit[distractor]`` at the metric's positions, averaged over them."""
    at = logits[:, list(pairs.positions)].double()  # (B, P, V)
    return (at.gather(-1, pairs.targets[..., None]) - at.gather(-1, pairs.distractors[..., None]))[..., 0].mean(1)


@contextmanager
def _heads_in(attns: list[nn.Module], keep: dict[int, Tensor] | None,
              put: dict[int, tuple[list[int], int, Tensor]] | None) -> Iterator[None]:
    """While open: each attention's output-projection input ``(B, L, H * Dv)`` kept in ``keep[id]``, and for
    ``put[id] = (heads, Dv, value)`` those heads' slices replaced by ``value``'s."""
    handles = []

    def pre(module: nn.Module, args: tuple[Tensor, ...], owner: int) -> tuple[Tensor, ...] | None:
        z = args[0]
        if keep is not None:
            keep[owner] = z.detach()
        if put is not None and owner in put:
            hs, d, value = put[owner]
            z = z.clone()
            for h in hs:
                z[..., h * d:(h + 1) * d] = value[..., h * d:(h + 1) * d]
            return (z,)
        return None

    for a in attns:
        owner = id(a)
        handles.append(a.out_proj.register_forward_pre_hook(  # type: ignore[union-attr]
            lambda m, args, owner=owner: pre(m, args, owner)))
    try:
        yield
    finally:
        for hd in handles:
            hd.remove()


@dataclass(frozen=True)
class HeadPatching:
    """Every head's effect (share of the metric it removes, with its bootstrap 95% interval), the metric's full
    (clean), corrupted and per-head patched means, and the cross-attention heads' attention on the year."""

    task: str
    ablation: str
    heads: tuple[str, ...]
    effect: np.ndarray  # (N,)
    low: np.ndarray
    high: np.ndarray
    m_clean: float
    m_corrupt: float
    m_patched: np.ndarray  # (N,)
    attention: dict[str, dict[str, float]]  # cross head -> {"on_year": share, "aligned": share}
    n_prompts: int
    seed: int
    example: dict[str, Any]

    def ranked(self) -> list[int]:
        """The single heads, largest effect first (the groups, "all ...", last in ``heads``, left out)."""
        singles = (i for i, h in enumerate(self.heads) if not h.startswith("all "))
        return sorted(singles, key=lambda i: -self.effect[i])

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task, "ablation": self.ablation, "prompts": self.n_prompts, "seed": self.seed,
                "metric": "logit[clean year digit] - logit[corrupted year digit], mean over the four digits",
                "clean": self.m_clean, "corrupt": self.m_corrupt,
                "heads": [{"head": h, "kind": KINDS[head_tag(h)], "effect": float(self.effect[i]),
                           "ci95": [float(self.low[i]), float(self.high[i])], "patched": float(self.m_patched[i]),
                           **({"attention": self.attention[h]} if h in self.attention else {})}
                          for i, h in enumerate(self.heads)],
                "example": self.example}


@torch.no_grad()
def patch_translator_heads(model: nn.Module, pairs: TranslationPairs, *, ablation: str = "corrupt",
                           boot: int = 1000) -> HeadPatching:
    """Patch every head of ``model`` in turn (module docstring) and measure its effect on ``pairs``' metric."""
    if ablation not in ("corrupt", "mean", "resample"):
        raise InputError(f"ablation must be corrupt, mean or resample, got {ablation!r}")
    heads = translator_heads(model)
    attns = list({id(a): a for _, a, _ in heads}.values())
    was = model.training
    model.eval()
    try:
        clean_z: dict[int, Tensor] = {}
        with _heads_in(attns, clean_z, None):
            m_clean = _metric(model(pairs.clean, pairs.tgt_in), pairs)
        weights = _cross_weights(model, pairs)
        corrupt_z: dict[int, Tensor] = {}
        with _heads_in(attns, corrupt_z, None):
            m_corrupt = _metric(model(pairs.corrupt, pairs.tgt_in), pairs)
        if ablation == "corrupt":
            source = corrupt_z
        elif ablation == "mean":
            source = {k: v.mean(0, keepdim=True).expand_as(v) for k, v in clean_z.items()}
        else:  # resample: another prompt's clean run
            source = {k: v.roll(1, 0) for k, v in clean_z.items()}
        groups = [[(a, h)] for _, a, h in heads] + [[(a, h) for n, a, h in heads if n[0] == tag] for tag in KINDS]
        patched = []
        for group in groups:
            put: dict[int, tuple[list[int], int, Tensor]] = {}
            for attn, h in group:
                d = int(attn.out_proj.in_features) // int(attn.n_heads)  # type: ignore[union-attr, arg-type]
                put.setdefault(id(attn), ([], d, source[id(attn)]))[0].append(h)
            with _heads_in(attns, None, put):
                patched.append(_metric(model(pairs.clean, pairs.tgt_in), pairs))
    finally:
        model.train(was)
    mc, mx = m_clean.numpy(), m_corrupt.numpy()
    mp = torch.stack(patched).numpy()  # (N, B)
    effect = (mc.mean() - mp.mean(1)) / (mc.mean() - mx.mean())
    rng = np.random.default_rng(pairs.seed)
    idx = rng.integers(0, len(mc), (boot, len(mc)))  # (R, B)
    boots = (mc[idx].mean(1)[None] - mp[:, idx].mean(2)) / (mc[idx].mean(1) - mx[idx].mean(1))[None]  # (N, R)
    low, high = np.percentile(boots, [2.5, 97.5], axis=1)
    names = tuple(n for n, _, _ in heads) + tuple(f"all {KINDS[tag]}" for tag in KINDS)
    return HeadPatching(pairs.task, ablation, names, effect, low, high, float(mc.mean()), float(mx.mean()),
                        mp.mean(1), _year_attention(names, weights, pairs), len(mc), pairs.seed,
                        _example(pairs, weights))


def _cross_weights(model: nn.Module, pairs: TranslationPairs) -> dict[str, Tensor]:
    """Each cross-attention head's weights ``(B, T, S)`` on the clean run."""
    from ..capturing import capture

    with capture(model, kinds="cross") as cap:
        model(pairs.clean, pairs.tgt_in)
    out = {}
    for i, r in enumerate(cap.records):
        for h in range(r.weights.shape[1]):
            out[f"x{i}.{h}"] = r.weights[:, h].detach().double()
    return out


def _year_attention(names: tuple[str, ...], weights: dict[str, Tensor],
                    pairs: TranslationPairs) -> dict[str, dict[str, float]]:
    pos = list(pairs.positions)
    out = {}
    for name in names:
        if name not in weights:
            continue
        w = weights[name][:, pos]  # (B, P, S)
        on_year = w.gather(-1, pairs.year_source[:, None, :].expand(-1, len(pos), -1)).sum(-1)  # (B, P)
        aligned = w.gather(-1, pairs.year_source[..., None])[..., 0]  # (B, P): the digit being written
        out[name] = {"on_year": float(on_year.mean()), "aligned": float(aligned.mean())}
    return out


def _example(pairs: TranslationPairs, weights: dict[str, Tensor]) -> dict[str, Any]:
    """The first prompt, for the figure: its sources and each cross head's weights from the year's positions."""
    return {"source": pairs.texts[0][0], "corrupted": pairs.texts[0][1],
            "year_source": pairs.year_source[0].tolist(), "positions": list(pairs.positions),
            "weights": {k: v[0, list(pairs.positions)].tolist() for k, v in weights.items()}}


TRANSLATION_TASKS: dict[str, Callable[[Any, int, int], TranslationPairs]] = {"dates-year": dates_year_pairs}
