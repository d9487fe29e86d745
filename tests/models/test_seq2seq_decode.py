"""Decoding: beam search against exhaustive enumeration, beam=1 against greedy, batched against one by one, and the
transformer's key/value-cache steps against recomputing the decoder over the whole prefix (all float64)."""

from __future__ import annotations

import itertools
import math
from typing import ClassVar

import pytest
import torch
from helpers.seq2seq import BOS, EOS, UNK, make, sequence_log_prob, sources, targets
from torch import Tensor, nn

from attnlab.models import length_penalty
from attnlab.models._decode import Specials, beam_search, greedy

SPECIALS = Specials(pad=0, bos=BOS, eos=EOS)


def exhaustive_best(
    model: nn.Module, src: Tensor, vocab: int, max_length: int, alpha: float
) -> tuple[list[int], float]:
    """Every hypothesis of at most ``max_length`` tokens (EOS-ended, or ``max_length`` tokens without EOS) over
    the tokens generation may produce, scored by teacher forcing; the best by ``log p / length_penalty``."""
    words = [UNK, *range(4, vocab)]  # not PAD, BOS, EOS
    hypotheses = [(list(body), True) for n in range(max_length) for body in itertools.product(words, repeat=n)]
    hypotheses += [(list(body), False) for body in itertools.product(words, repeat=max_length)]
    best: tuple[float, list[int], float] | None = None
    for tokens, ended in hypotheses:
        logp = sequence_log_prob(model, src, tokens, ended)
        norm = logp / length_penalty(len(tokens) + ended, alpha)
        if best is None or norm > best[0]:
            best = (norm, tokens, logp)
    assert best is not None
    return best[1], best[2]


@pytest.mark.parametrize("name", ["bahdanau", "luong-location", "transformer"])
@pytest.mark.parametrize("alpha", [0.0, 1.0, 3.0])
def test_a_wide_beam_finds_the_exact_best_sequence(name: str, alpha: float) -> None:
    """Target vocabulary: 3 words and EOS, max_length 3: 40 hypotheses per source. A beam of 36 holds every
    extension of every prefix, so beam search must return the exhaustive optimum, score included."""
    vocab, max_length = 6, 3
    model = make(name, vocab=vocab, eos_bias=0.5)
    src = sources([4, 2, 6, 3, 5], seed=3)
    gen = model.generate(src, beam=36, max_length=max_length, length_penalty=alpha)
    picked_short = 0
    for i in range(len(src)):
        alone = src[i : i + 1]
        tokens, logp = exhaustive_best(model, alone, vocab, max_length, alpha)
        assert gen.tokens[i] == tokens
        assert abs(gen.scores[i] - logp) < 1e-9
        picked_short += len(tokens) < max_length
    if alpha == 0.0:  # (a large alpha favours the longest hypotheses)
        assert picked_short  # an EOS-ended hypothesis won somewhere: the finished ones are kept and compared


class FixedStepper:
    """A decoder whose next-token distribution depends on the position only (vocabulary PAD UNK BOS EOS w)."""

    W = 4
    TABLE: ClassVar[list[tuple[float, float, float]]] = [  # p(UNK), p(EOS), p(w) at positions 0, 1, 2, ...
        (0.1, 0.3, 0.6),
        (0.0975, 0.4025, 0.5),
        (0.2, 0.5, 0.3),
    ]

    def __init__(self, rows: int) -> None:
        self.rows = rows

    def step(self, tokens: Tensor, position: int) -> tuple[Tensor, Tensor]:
        unk, eos, w = self.TABLE[min(position, 2)]
        logits = torch.tensor([0.0, unk, 0.0, eos, w], dtype=torch.float64).log()  # PAD, BOS: -inf
        return logits.expand(len(tokens), 5).clone(), torch.full((len(tokens), 2), 0.5)

    def reorder(self, index: Tensor) -> None:
        self.rows = len(index)


@pytest.mark.parametrize(("alpha", "long_wins"), [(0.0, False), (1.0, False), (2.0, True)])
def test_length_normalisation_is_gnmt_over_the_tokens_with_eos(alpha: float, long_wins: bool) -> None:
    """"EOS" at once (p 0.3, 1 token) against "w EOS" (p 0.6 * 0.4025 = 0.2415, 2 tokens): |log 0.2415| / |log 0.3|
    = 1.18, more than (7/6)**1 (the short one wins at alpha 1) and less than (7/6)**2 (the long one wins at 2)."""
    assert abs(math.log(0.6 * 0.4025) / math.log(0.3) - 1.18) < 1e-3
    gen = beam_search(FixedStepper(1), torch.tensor([2]), SPECIALS, 3, beam=8, alpha=alpha)
    assert gen.tokens == [[FixedStepper.W] if long_wins else []]
    assert gen.scores[0] == pytest.approx(math.log(0.2415 if long_wins else 0.3), abs=1e-12)


@pytest.mark.parametrize(("name", "eos_bias"), [("bahdanau", 0.0), ("luong-concat", 0.0), ("transformer", 1.0)])
def test_beam_of_one_is_greedy(name: str, eos_bias: float) -> None:
    model = make(name, eos_bias=eos_bias)  # biases that give these random models hypotheses of varied lengths
    src = sources([5, 2, 7, 3, 4, 6], seed=4)
    src_len = (src != 0).sum(1)
    with torch.no_grad():
        g = greedy(model._stepper(src), src_len, SPECIALS, 7)
        b = beam_search(model._stepper(src), src_len, SPECIALS, 7, beam=1, alpha=0.0)
    assert g.tokens == b.tokens
    assert len({len(t) for t in g.tokens}) > 1  # hypotheses of different lengths: EOS handling is exercised
    for i in range(6):
        assert abs(g.scores[i] - b.scores[i]) < 1e-12
        assert torch.equal(g.alignment[i], b.alignment[i])
    assert model.generate(src, max_length=7).tokens == g.tokens


@pytest.mark.parametrize("name", ["luong-general", "transformer"])
def test_reported_scores_are_the_model_log_probabilities(name: str) -> None:
    model = make(name, eos_bias=1.0)
    src = sources([4, 6], seed=5)
    for beam in (1, 4):
        gen = model.generate(src, beam=beam, max_length=6, length_penalty=0.6)
        for i in range(2):
            ended = len(gen.tokens[i]) < 6
            logp = sequence_log_prob(model, src[i : i + 1, : int((src[i] != 0).sum())], gen.tokens[i], ended)
            assert abs(gen.scores[i] - logp) < 1e-9


def test_key_value_cache_steps_equal_the_full_decoder() -> None:
    """Each step feeds one token and reads the cache; the logits equal the teacher-forced decoder over the
    whole prefix, and every step projects only the new token (the memory once)."""
    model = make("transformer")
    src, tgt_in = sources([5, 3, 6], seed=6), targets([6, 4, 6], seed=7)
    full = model(src, tgt_in)  # (B, T, V)
    widths: dict[str, list[int]] = {"self": [], "cross": []}
    hooks = []
    for layer in model.decoder.layers:
        for kind, attn in (("self", layer.self_attn), ("cross", layer.cross_attn)):
            hooks.append(attn.k_proj.register_forward_hook(
                lambda mod, args, out, kind=kind: widths[kind].append(args[0].shape[1])))
    stepper = model._stepper(src)
    with torch.no_grad():
        for t in range(tgt_in.shape[1]):
            logits, _ = stepper.step(tgt_in[:, t], t)
            assert (logits - full[:, t]).abs().max() < 1e-10
    for h in hooks:
        h.remove()
    assert widths["self"] == [1] * (2 * tgt_in.shape[1])  # 2 layers, one new token per step
    assert widths["cross"] == [6, 6]  # the memory, projected once per layer
    assert len(stepper.cache[0].self_attn) == tgt_in.shape[1]


@pytest.mark.parametrize("name", ["bahdanau", "luong-concat", "transformer"])
def test_reordering_the_state_follows_the_rows(name: str) -> None:
    """Beam search reorders the decoder state; afterwards each row decodes as if it had been that row from the
    start (the transformer's caches included)."""
    model = make(name)
    src, tgt_in = sources([5, 3, 6], seed=8), targets([4, 4, 4], seed=9)
    index = torch.tensor([2, 0, 0, 1])
    a, b = model._stepper(src), model._stepper(src[index])
    with torch.no_grad():
        for t in range(2):
            a.step(tgt_in[:, t], t)
            b.step(tgt_in[index, t], t)
        a.reorder(index)
        for t in range(2, 4):
            la, wa = a.step(tgt_in[index, t], t)
            lb, wb = b.step(tgt_in[index, t], t)
            assert (la - lb).abs().max() < 1e-12 and (wa - wb).abs().max() < 1e-12


def test_batched_beam_search_equals_one_source_at_a_time() -> None:
    model = make("transformer", eos_bias=1.0)
    lengths = [6, 2, 4]
    src = sources(lengths, seed=10)
    batched = model.generate(src, beam=5, max_length=8, length_penalty=0.8)
    for i, n in enumerate(lengths):
        one = model.generate(src[i : i + 1, :n], beam=5, max_length=8, length_penalty=0.8)
        assert one.tokens[0] == batched.tokens[i]
        assert abs(one.scores[0] - batched.scores[i]) < 1e-9
        torch.testing.assert_close(one.alignment[0], batched.alignment[i], atol=1e-6, rtol=0)


def test_a_hypothesis_without_eos_stops_at_max_length() -> None:
    model = make("bahdanau", eos_bias=-30.0)  # EOS is never likely
    for beam in (1, 4):
        gen = model.generate(sources([3, 4]), beam=beam, max_length=5)
        assert [len(t) for t in gen.tokens] == [5, 5]
        assert [a.shape for a in gen.alignment] == [(5, 3), (5, 4)]
