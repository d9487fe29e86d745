"""Decoding for the translation models: batched greedy search and batched beam search.

Letters: B batch (sources), K beam, N rows the decoder runs (B, or B * K), S source length, V target vocabulary.

A model hands the search a :class:`Stepper`: an object that holds the encoded sources and the decoder's state
(a recurrent state, or the transformer's key/value caches), runs one decoding step for ``N`` rows at once and
reorders its rows (beam search keeps the rows of the surviving hypotheses).  The search itself only sees
logits and attention weights, so both models decode through the same code.

Lengths: ``max_length`` is the most tokens a hypothesis may generate, its EOS included.  A hypothesis that
reaches it without EOS is kept as it is (truncated).  ``[PAD]`` and ``[BOS]`` are never generated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from .. import _validate as check
from ..errors import ConfigError

__all__ = ["Generation", "Specials", "Stepper", "beam_search", "check_search", "greedy", "length_penalty"]


@dataclass
class Generation:
    """What ``generate`` returns, one entry per source.

    ``tokens``: the generated ids, without BOS and EOS.  ``scores``: the log-probability of the chosen sequence
    under the model (the sum over its tokens, EOS included; beam search *chooses* by the length-normalised
    score, see :func:`length_penalty`, but reports this raw sum).  ``alignment``: a ``(T_i, S_i)`` tensor per
    source, the attention weights of each generated token (rows, EOS excluded) over the source tokens
    (columns, every real source token, its EOS included); each row sums to one.  ``lengths``: the tokens each
    score adds up (the generated ones, and EOS when the search ended with one).
    """

    tokens: list[list[int]]
    scores: list[float]
    alignment: list[Tensor]
    lengths: list[int]

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def confidences(self) -> list[float]:
        """The length-normalised log-probability of each chosen sequence: ``score / length``, the mean
        log-probability per scored token (EOS included), in ``(-inf, 0]``; 0 is certainty."""
        return [s / max(n, 1) for s, n in zip(self.scores, self.lengths, strict=True)]


@dataclass(frozen=True)
class Specials:
    """The special target ids the search needs."""

    pad: int
    bos: int
    eos: int


class Stepper(Protocol):
    """One model's decoder, ready to run on encoded sources (see the module docstring)."""

    def step(self, tokens: Tensor, position: int) -> tuple[Tensor, Tensor]:
        """Feed ``tokens`` ``(N,)`` (the previous outputs; BOS at position 0) at target ``position``; return
        ``(logits (N, V), attention weights over the source (N, S))``."""
        ...

    def reorder(self, index: Tensor) -> None:
        """Keep the rows ``index`` ``(N',)`` of the state, in that order (repeats allowed)."""
        ...


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's length normalisation (Wu et al., 2016): ``((5 + length) / 6) ** alpha``; ``alpha = 0`` is none."""
    return ((5.0 + length) / 6.0) ** alpha


def _log_probs(logits: Tensor, specials: Specials) -> Tensor:
    """``(N, V)`` log-probabilities in float64 (scores add up over steps), PAD and BOS forbidden."""
    logp = torch.log_softmax(logits.to(torch.float64), dim=-1)  # (N, V)
    logp[:, specials.pad] = -math.inf
    logp[:, specials.bos] = -math.inf
    return logp


def check_search(beam: Any, max_length: Any, alpha: Any, limit: int) -> None:
    """The arguments of ``generate``."""
    check.positive_int("beam", beam, fix="beam=1 is greedy search; 4 or 5 is usual for beam search")
    check.positive_int("max_length", max_length, optional=True, fix="None means the model's max_length")
    if max_length is not None and max_length > limit:
        raise ConfigError(f"max_length={max_length} is more than the model's max_length={limit}; "
                          f"pass max_length <= {limit} or train a model with a larger max_length")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha < 0:
        raise ConfigError(f"length_penalty must be a finite number >= 0, got {check.got(alpha)}; "
                          f"0 ranks hypotheses by their log-probability, 0.6-1.0 favours longer ones (GNMT)")


def greedy(stepper: Stepper, src_len: Tensor, specials: Specials, max_length: int) -> Generation:
    """The most likely token at each step, for every source at once; a finished row keeps being fed EOS (its
    outputs are ignored) until every row has finished or ``max_length`` tokens were generated.

    ``src_len`` ``(B,)``: the real tokens of each source (the alignment's columns)."""
    b = src_len.shape[0]
    tokens = torch.full((b,), specials.bos, dtype=torch.long, device=src_len.device)
    done = torch.zeros(b, dtype=torch.bool, device=src_len.device)
    score = torch.zeros(b, dtype=torch.float64, device=src_len.device)
    length = torch.full((b,), max_length, dtype=torch.long, device=src_len.device)  # tokens made, EOS included
    outputs: list[Tensor] = []  # (B,) per step
    weights: list[Tensor] = []  # (B, S) per step
    for t in range(max_length):
        logits, w = stepper.step(tokens, t)
        logp = _log_probs(logits, specials)  # (B, V)
        best = logp.argmax(dim=-1)  # (B,)
        best = torch.where(done, torch.full_like(best, specials.eos), best)
        score += torch.where(done, torch.zeros_like(score), logp.gather(1, best[:, None])[:, 0])
        ended = ~done & (best == specials.eos)
        length[ended] = t + 1
        done |= ended
        outputs.append(best)
        weights.append(w.detach())
        if bool(done.all()):
            break
        tokens = best
    ids = torch.stack(outputs, dim=1).tolist()  # (B, T)
    align = torch.stack(weights, dim=1)  # (B, T, S)
    gen = Generation([], [], [], [])
    for i in range(b):
        n = int(length[i])
        seq = ids[i][:n]
        if seq and seq[-1] == specials.eos:
            seq = seq[:-1]
        gen.tokens.append(seq)
        gen.scores.append(float(score[i]))
        gen.lengths.append(n)
        gen.alignment.append(align[i, : len(seq), : int(src_len[i])].float().cpu())  # (T_i, S_i)
    return gen


@dataclass
class _Best:
    """The best finished hypothesis of one source so far."""

    normalised: float
    score: float
    length: int  # the tokens the score adds up, EOS included when it ended with one
    tokens: list[int]
    alignment: Tensor  # (T, S)


def beam_search(
    stepper: Stepper, src_len: Tensor, specials: Specials, max_length: int, beam: int, alpha: float
) -> Generation:
    """Batched beam search with ``beam`` hypotheses per source.

    At each step every live hypothesis is extended by every token; of the ``2 * beam`` best extensions per
    source, those ending in EOS that rank among the first ``beam`` are *finished* (kept, scored by
    ``log p / length_penalty(length, alpha)`` with ``length`` the tokens generated, EOS included; see
    :func:`length_penalty`), and the ``beam`` best that do not end in EOS live on.  At ``max_length`` the best
    live ones are finished as they are.  A source is done when it has ``beam`` finished hypotheses, or when no
    live hypothesis can beat its best finished one any more (its log-probability can only fall, and the
    penalty is largest at ``max_length``).  With ``beam=1`` this is greedy search; with a beam as wide as the
    number of hypotheses it is exhaustive (the tests check both).
    """
    b, k = src_len.shape[0], beam
    device = src_len.device
    stepper.reorder(torch.arange(b, device=device).repeat_interleave(k))  # (B * K,): K copies of each source
    scores = torch.full((b, k), -math.inf, dtype=torch.float64, device=device)  # (B, K)
    scores[:, 0] = 0.0  # one live hypothesis (BOS) per source at the start
    tokens = torch.full((b * k,), specials.bos, dtype=torch.long, device=device)
    history = torch.zeros(b * k, 0, dtype=torch.long, device=device)  # (B * K, t) the generated ids
    align: Tensor | None = None  # (B * K, t, S) their attention rows
    best: list[_Best | None] = [None] * b
    finished = [0] * b
    done = [False] * b
    bound = length_penalty(max_length, alpha)
    rows = torch.arange(b, device=device)[:, None] * k  # (B, 1) first row of each source
    for t in range(max_length):
        logits, w = stepper.step(tokens, t)  # (B * K, V), (B * K, S)
        w = w.detach()
        if align is None:
            align = w.new_zeros(b * k, 0, w.shape[-1])
        logp = _log_probs(logits, specials)  # (B * K, V)
        v = logp.shape[-1]
        candidates = (scores.reshape(-1, 1) + logp).reshape(b, k * v)  # (B, K * V)
        top, index = candidates.topk(min(2 * k, k * v), dim=1)  # (B, 2K) best first
        parent, token = index // v, index % v  # (B, 2K) the hypothesis extended, the token added
        is_eos = token == specials.eos
        last = t == max_length - 1
        finish = (is_eos | last) & torch.isfinite(top)
        finish[:, k:] = False  # only extensions ranked among the first K finish
        for i, j in finish.nonzero().tolist():
            if done[i]:
                continue
            finished[i] += 1
            norm = float(top[i, j]) / length_penalty(t + 1, alpha)
            kept = best[i]
            if kept is not None and norm <= kept.normalised:
                continue
            r = i * k + int(parent[i, j])
            ended = bool(is_eos[i, j])
            seq = history[r].tolist() + ([] if ended else [int(token[i, j])])
            rows_ = align[r] if ended else torch.cat([align[r], w[r][None]], dim=0)  # (T, S) EOS row dropped
            best[i] = _Best(norm, float(top[i, j]), t + 1, seq, rows_[:, : int(src_len[i])].float().cpu())
        if last:
            break
        order = torch.argsort(is_eos.to(torch.uint8), dim=1, stable=True)[:, :k]  # (B, K) non-EOS first, best first
        scores = top.gather(1, order)  # (B, K)
        scores = torch.where(is_eos.gather(1, order), torch.full_like(scores, -math.inf), scores)
        keep = (rows + parent.gather(1, order)).reshape(-1)  # (B * K,) rows of the surviving parents
        tokens = token.gather(1, order).reshape(-1)  # (B * K,)
        history = torch.cat([history[keep], tokens[:, None]], dim=1)  # (B * K, t + 1)
        align = torch.cat([align[keep], w[keep][:, None]], dim=1)  # (B * K, t + 1, S)
        stepper.reorder(keep)
        live = scores.max(dim=1).values / bound  # (B,) the best any live hypothesis could still reach
        for i in range(b):
            kept = best[i]
            if not done[i] and kept is not None and (finished[i] >= k or kept.normalised >= float(live[i])):
                done[i] = True
        if all(done):
            break
    gen = Generation([], [], [], [])
    for found in best:
        assert found is not None  # at max_length every source finishes its best live hypotheses
        gen.tokens.append(found.tokens)
        gen.scores.append(found.score)
        gen.lengths.append(found.length)
        gen.alignment.append(found.alignment)
    return gen
