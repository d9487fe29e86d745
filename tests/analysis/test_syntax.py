"""Syntactic agreement: CoNLL-U reading, words matched to sub-word tokens, a planted dependency head
found per relation against the fixed-offset baseline, and treebanks that do not match the text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnlab.analysis import dependency_counts, label_heads, read_conllu, relation_scores, word_pieces
from attnlab.analysis.labels import SYNTACTIC_MARGIN
from attnlab.analysis.metrics import head_metrics
from attnlab.analysis.syntax import word_attention
from attnlab.errors import InputError

CAT = """\
# sent_id = cat
# text = The cat sat on the mat.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_
4\ton\ton\tADP\tIN\t_\t6\tcase\t_\t_
5\tthe\tthe\tDET\tDT\t_\t6\tdet\t_\t_
6\tmat\tmat\tNOUN\tNN\t_\t3\tobl\t_\t_
7\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_
"""
DOGS = """\
# sent_id = dogs
# text = I don't like unbelievably big dogs.
1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tlike\tlike\tVERB\tVB\t_\t0\troot\t_\t_
5\tunbelievably\tunbelievably\tADV\tRB\t_\t6\tadvmod\t_\t_
6\tbig\tbig\tADJ\tJJ\t_\t7\tamod\t_\t_
7\tdogs\tdog\tNOUN\tNNS\t_\t4\tobj\t_\t_
8\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_
"""
# the model's pieces of each treebank word (WordPiece, uncased): "don't" splits as don ' t, not do n't
PIECES = {"cat": [["the"], ["cat"], ["sat"], ["on"], ["the"], ["mat"], ["."]],
          "dogs": [["i"], ["don"], ["'", "t"], ["like"], ["un", "##bel", "##ievab", "##ly"], ["big"], ["dogs"], ["."]]}


def write(tmp_path: Path, *blocks: str) -> Path:
    path = tmp_path / "t.conllu"
    path.write_text("\n".join(blocks) + "\n", encoding="utf-8")
    return path


def tokens_for(names: list[str]) -> list[str]:
    return ["[CLS]", *(p for n in names for word in PIECES[n] for p in word), "[SEP]"]


def test_read_conllu_skips_multiword_lines(tmp_path: Path) -> None:
    cat, dogs = read_conllu(write(tmp_path, CAT, DOGS))
    assert cat.words == ["The", "cat", "sat", "on", "the", "mat", "."] and cat.heads[1] == 2 and cat.heads[2] == -1
    assert dogs.words[1:3] == ["do", "n't"] and dogs.relations[2] == "advmod" and dogs.name == "2 (dogs)"


def test_words_match_sub_word_tokens(tmp_path: Path) -> None:
    sentences = read_conllu(write(tmp_path, CAT, DOGS))
    tokens = tokens_for(["cat", "dogs"])
    pieces = word_pieces(sentences, tokens)
    assert [[tokens[i] for i in w] for w in pieces[0]] == [["the"], ["cat"], ["sat"], ["on"], ["the"], ["mat"], ["."]]
    # "do" takes "don" (the piece starts in it); "n't" takes "'" and "t"
    assert [[tokens[i] for i in w] for w in pieces[1]][:5] == [["i"], ["don"], ["'", "t"], ["like"],
                                                               ["un", "##bel", "##ievab", "##ly"]]


def test_word_attention_sums_keys_and_averages_queries() -> None:
    w = np.random.default_rng(0).random((1, 1, 4, 4))
    w /= w.sum(-1, keepdims=True)
    got = word_attention(w, [[0], [1, 2], [3]])
    assert got[0, 0, 1, 1] == pytest.approx((w[0, 0, 1, 1] + w[0, 0, 1, 2] + w[0, 0, 2, 1] + w[0, 0, 2, 2]) / 2)
    np.testing.assert_allclose(got.sum(-1), 1.0)


def planted(sentences, tokens, pieces) -> np.ndarray:
    """(2 layers, 2 heads, n, n): layer 1 head 0 sends every piece of a word to its syntactic head's
    first piece (the root to [CLS]); the other heads attend to the previous token."""
    n = len(tokens)
    w = np.zeros((2, 2, n, n))
    w[:, :, 0, 0] = 1.0
    w[:, :, np.arange(1, n), np.arange(n - 1)] = 1.0
    w[1, 0] = 0.0
    w[1, 0, 0, 0] = w[1, 0, n - 1, 0] = 1.0
    for sent, words in zip(sentences, pieces, strict=True):
        for d, h in enumerate(sent.heads):
            target = words[h][0] if h >= 0 else 0
            w[1, 0, words[d], target] = 1.0
    return w


def test_planted_dependency_head_beats_the_baseline(tmp_path: Path) -> None:
    sentences = read_conllu(write(tmp_path, *[CAT, DOGS] * 3))  # 6 nsubj arcs: enough for a label
    tokens = tokens_for(["cat", "dogs"] * 3)
    pieces = word_pieces(sentences, tokens)
    w = planted(sentences, tokens, pieces)
    counts = dependency_counts(w, sentences, pieces)
    rows = {r["relation"]: r for r in relation_scores(counts)}
    nsubj = rows["nsubj"]
    assert (nsubj["layer"], nsubj["head"], nsubj["direction"], nsubj["accuracy"]) == (1, 0, "dep->head", 1.0)
    assert nsubj["baseline"] == 0.5 and nsubj["count"] == 6  # cat->sat is +1, I->like is +3
    assert rows["det"]["baseline"] == 1.0 and "punct" not in rows and "root" not in rows
    # the previous-token heads score exactly the arcs whose head is the word before
    prev = counts.hits[("det", "dep->head")][0, 0] / counts.total["det"]
    assert prev == 0.0  # a determiner's head comes after it
    labels = label_heads(head_metrics(w, tokens), dependencies=counts)
    found = {e["label"] for e in labels.evidence[1][0]}
    assert "syntactic: nsubj" in found and "syntactic: det" not in found  # det: no margin over a 100% baseline
    assert all(e["accuracy"] - e["baseline"] >= SYNTACTIC_MARGIN for e in labels.evidence[1][0]
               if e["kind"] == "syntactic")


def test_treebank_that_does_not_match_names_the_sentence(tmp_path: Path) -> None:
    sentences = read_conllu(write(tmp_path, CAT, DOGS.replace("\tdogs\tdog", "\tcats\tcat")))
    with pytest.raises(InputError, match=r"sentence 2 \(dogs\): word 7 'cats' does not match.*'dogs"):
        word_pieces(sentences, tokens_for(["cat", "dogs"]))
    with pytest.raises(InputError, match="ends before the text"):
        word_pieces(sentences[:1], tokens_for(["cat", "dogs"]))


def test_bad_treebank_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no treebank file"):
        read_conllu(tmp_path / "missing.conllu")
    with pytest.raises(InputError, match="holds no sentences"):
        read_conllu(write(tmp_path, ""))
    with pytest.raises(InputError, match="not a readable CoNLL-U file"):
        read_conllu(write(tmp_path, "1\tThe\tthe\n"))
    with pytest.raises(InputError, match="has head 9"):
        read_conllu(write(tmp_path, CAT.replace("\t2\tdet", "\t9\tdet")))
