"""A translator's trace names each decoding step by the token it writes (issue 29, item 7)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest
from helpers.seq2seq import EOS, transformer

from attnlab.capturing import trace_translation


class _Replayed:
    """A translator whose beam search 'found' the ids 4 5 6; trace_translation replays them teacher-forced."""

    def __init__(self) -> None:
        self.model = transformer().eval()

    def encode(self, texts: list[str]) -> list[list[int]]:
        return [[5, 6, 7, 8, EOS]]

    def translate(self, texts: list[str], *, beam: int = 1, warn: bool = True) -> list[SimpleNamespace]:
        return [SimpleNamespace(ids=[4, 5, 6], source_tokens=["s1", "s2", "s3", "s4", "[EOS]"],
                                target_tokens=["甲", "乙", "丙"])]


def test_a_replayed_transformer_names_rows_by_the_token_written_and_keys_by_the_token_read() -> None:
    _, trace = trace_translation(_Replayed(), "any", beam=2)  # type: ignore[arg-type]
    kinds = {r.kind for r in trace.records}
    assert kinds == {"self", "causal", "cross"}
    for r in trace.records:
        if r.kind == "self":
            assert r.query_tokens == r.key_tokens == ["s1", "s2", "s3", "s4", "[EOS]"]
        elif r.kind == "cross":  # row i is the step that writes token i; the last writes EOS
            assert r.query_tokens == ["甲", "乙", "丙", "[EOS]"] and r.key_tokens == ["s1", "s2", "s3", "s4", "[EOS]"]
        else:  # the decoder's self-attention: queries by what they write, keys by what they read
            assert r.query_tokens == ["甲", "乙", "丙", "[EOS]"] and r.key_tokens == ["[BOS]", "甲", "乙", "丙"]


@pytest.mark.parametrize("beam", [1, 3])
def test_the_bundled_translator_labels_match_the_translation(beam: int) -> None:
    from attnlab.training import load_translator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        translation, trace = trace_translation(load_translator("dates-zh"), "Friday, March 5, 2021", beam=beam)
    [cross] = trace.select(kind="cross")
    written = [*translation.target_tokens, "[EOS]"]
    assert cross.query_tokens == written[: cross.weights.shape[2]]
    assert "[BOS]" not in cross.query_tokens
    assert cross.query_tokens[translation.target_tokens.index("五")] == "五"  # the step that writes 五 is called 五
