"""The text summary: head patterns on hand-built heads, most attended keys, and the printed table."""

from __future__ import annotations

import pytest
import torch

import attnlab as al
from attnlab.errors import InputError
from attnlab.viz.summary import MOSTLY, head_pattern, layer_summaries, pattern_scores

TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"]
N = len(TOKENS)


def blend(target: torch.Tensor, share: float) -> torch.Tensor:
    """``share`` of every row on ``target``'s pattern, the rest spread uniformly: rows still sum to one."""
    return share * target + (1 - share) * torch.full((N, N), 1 / N)


def one_hot_rows(columns: list[int]) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(columns), N).float()


PATTERNS = {
    "self": torch.eye(N),
    "previous token": one_hot_rows([0, *range(N - 1)]),
    "next token": one_hot_rows([*range(1, N), N - 1]),
    "[CLS]": one_hot_rows([0] * N),
    "[SEP]": one_hot_rows([N - 1] * N),
}


@pytest.mark.parametrize("name", list(PATTERNS))
def test_head_pattern_finds_each_pattern(name):
    w = blend(PATTERNS[name], 0.8)
    assert torch.allclose(w.sum(-1), torch.ones(N))
    assert head_pattern(w, TOKENS) == name


@pytest.mark.parametrize("name", list(PATTERNS))
def test_below_the_threshold_is_no_pattern(name):
    assert head_pattern(blend(PATTERNS[name], 0.3), TOKENS) is None
    assert pattern_scores(blend(PATTERNS[name], 0.3), TOKENS)[name] < MOSTLY


def test_without_special_tokens_the_first_token_is_named_so():
    assert head_pattern(blend(PATTERNS["[CLS]"], 0.9), [str(i) for i in range(N)]) == "first token"
    assert "[SEP]" not in pattern_scores(torch.eye(N), [str(i) for i in range(N)])


def make_trace() -> al.AttentionTrace:
    heads = torch.stack([blend(PATTERNS["[SEP]"], 0.9), blend(PATTERNS["self"], 0.7), torch.full((N, N), 1 / N)])
    layer1 = torch.stack([blend(PATTERNS["previous token"], 0.95)] * 3)
    records = [
        al.AttentionRecord(f"layer.{i}", "self", i, w[None], TOKENS, TOKENS) for i, w in enumerate([heads, layer1])
    ]
    return al.AttentionTrace(records)


def test_layer_summaries():
    s0, s1 = layer_summaries(make_trace(), top=2)
    assert s0.patterns == {"[SEP]": [0], "self": [1]}
    assert s1.patterns == {"previous token": [0, 1, 2]}
    (sep, share), _ = s0.top
    assert sep == N - 1
    # the mean over queries of the [SEP] column: head 0 (0.9 + uniform), head 1 (self: only the last row), head 2
    expected = ((0.9 + 0.1 / N) + (0.7 / N + 0.3 / N) + 1 / N) / 3
    assert share == pytest.approx(expected)


def test_summarize_prints_a_table():
    text = al.viz.summarize(make_trace(), top=2)
    lines = text.splitlines()
    assert lines[0] == "self-attention: 2 layers x 3 heads, 8 tokens"
    assert lines[1] == "tokens: " + " ".join(TOKENS)
    assert lines[4].split()[:2] == ["0", "[SEP]"]
    assert lines[4].endswith("[SEP] 0; self 1")
    assert lines[5].endswith("previous token 0,1,2")
    assert lines[5].split()[1:5] == ["[CLS]", "24%", "the@1", "12%"], "a repeated token carries its position"


def test_columns_align_with_wide_characters():
    zh = ["[CLS]", "我", "喜", "欢", "电", "影", "好", "[SEP]"]
    trace = make_trace()
    for rec in trace.records:
        rec.query_tokens = rec.key_tokens = zh
    trace.meta["model"] = "m"
    lines = al.viz.summarize(trace).splitlines()
    assert lines[0] == "self-attention (m): 2 layers x 3 heads, 8 tokens"
    from attnlab.viz.summary import _width

    starts = {_width(line[: line.index("[SEP] 0") if "[SEP] 0" in line else line.index("heads mostly")])
              for line in lines[3:5]}
    assert len(starts) == 1, lines


def test_summarize_empty_trace():
    with pytest.raises(InputError, match="empty"):
        al.viz.summarize(al.AttentionTrace())


def test_long_input_shares_keep_enough_digits_to_rank():
    """At 300 tokens every key gets well under 1% of the attention: whole percents would print 0% for all."""
    n = 300
    g = torch.Generator().manual_seed(0)
    bias = torch.zeros(n)
    bias[[30, 20, 10]] = torch.tensor([0.6, 0.4, 0.2])  # three keys a little above the rest, in this order
    w = (0.1 * torch.randn(1, 4, n, n, generator=g) + bias).softmax(-1)
    toks = [f"t{i}" for i in range(n)]
    trace = al.AttentionTrace([al.AttentionRecord("layer.0", "self", 0, w, toks, toks)])
    (summary,) = layer_summaries(trace)
    row = al.viz.summarize(trace).splitlines()[4].split()
    shares = [float(x.rstrip("%")) for x in row[2:8:2]]
    assert [row[1], row[3], row[5]] == [toks[j] for j, _ in summary.top] == ["t30", "t20", "t10"]
    assert all(0 < s < 1 for s in shares) and shares == sorted(shares, reverse=True) and len(set(shares)) == 3, row
    for shown, (_, share) in zip(shares, summary.top, strict=True):
        assert shown == pytest.approx(100 * share, rel=0.0125), "two significant digits (half a unit of 10)"


@pytest.mark.parametrize(("share", "shown"), [(0.57, "57%"), (0.1, "10%"), (0.05, "5.0%"), (0.0534, "5.3%"),
                                              (0.0041, "0.41%"), (0.0, "0.0%")])
def test_percent_has_two_significant_digits(share, shown):
    from attnlab.viz.summary import _percent

    assert _percent(share) == shown


def test_the_summary_reads_the_one_metric_and_special_token_table():
    """GPT-2's <|endoftext|> is a start token here as in analysis, and every pattern's share is the head's metric
    of attnlab.analysis (the first token's previous left out in both)."""
    from attnlab.analysis import head_metrics

    gpt2 = ["<|endoftext|>", "The", "Ġcat", "Ġsat", ".", "Ġon", "Ġit", "!"]
    assert head_pattern(blend(PATTERNS["[CLS]"], 0.9), gpt2) == "<|endoftext|>"
    for name, metric in (("previous token", "previous"), ("next token", "next"), ("self", "self")):
        w = blend(PATTERNS[name], 0.6)
        want = head_metrics(w[None, None].double(), TOKENS)[metric][0, 0]
        assert pattern_scores(w, TOKENS)[name] == pytest.approx(want, rel=1e-6), name
    w = blend(PATTERNS["[SEP]"], 0.7)
    assert pattern_scores(w, TOKENS)["[SEP]"] == pytest.approx(head_metrics(w[None, None], TOKENS)["sep"][0, 0])
