"""attention_stats(compile=True): the torch.compile'd per-tile update gives the eager statistics (masks, causal,
odd tiles, a fully masked row), and a compile failure warns once and falls back to the eager path."""

from __future__ import annotations

import warnings

import pytest
import torch

from attnlab.functional import attention_stats
from attnlab.functional import stats as stats_module


def _inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, k = torch.randn(2, 3, 37, 16), torch.randn(2, 3, 29, 16)
    mask = torch.rand(2, 1, 37, 29) > 0.3
    mask[0, 0, 5] = False  # a row with no allowed key
    return q, k, mask


def _same(a: object, b: object) -> None:
    for name in ("entropy", "distance", "top_weight", "lse"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name), rtol=1e-5, atol=1e-5, msg=name)
    assert torch.equal(a.top_index, b.top_index)  # type: ignore[attr-defined]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.slow
def test_compiled_equals_eager(causal: bool) -> None:
    q, k, mask = _inputs()
    for m in (None, mask):
        eager = attention_stats(q, k, mask=m, causal=causal, top_k=5, block_q=8, block_k=16)
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*torch.compile failed")  # it really compiled here
            fused = attention_stats(q, k, mask=m, causal=causal, top_k=5, block_q=8, block_k=16, compile=True)
        _same(fused, eager)
    assert stats_module._COMPILED["update"] is not None


def test_compile_failure_warns_once_and_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> object:
        raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found")

    monkeypatch.setattr(stats_module, "_COMPILED", {"update": broken})
    q, k, mask = _inputs()
    eager = attention_stats(q, k, mask=mask, top_k=5, block_q=8, block_k=16)
    with pytest.warns(RuntimeWarning, match="torch.compile failed .*InvalidCxxCompiler.* eager path"):
        first = attention_stats(q, k, mask=mask, top_k=5, block_q=8, block_k=16, compile=True)
    _same(first, eager)
    assert stats_module._COMPILED["update"] is None
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*torch.compile failed")  # once only
        again = attention_stats(q, k, mask=mask, top_k=5, block_q=8, block_k=16, compile=True)
    _same(again, eager)
