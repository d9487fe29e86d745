"""top1_hits counts what (argmax == target).sum() counts, ties and ignored targets included."""

from __future__ import annotations

import pytest
import torch

from attnlab.training._hits import top1_hits


def argmax_count(logits: torch.Tensor, targets: torch.Tensor) -> int:
    return int((logits.argmax(-1) == targets).sum())


@pytest.mark.parametrize("shape", [(7, 13), (3, 5, 11), (1, 1, 2), (2, 9, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_equals_argmax_with_ties(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(sum(shape))
    v = shape[-1]
    logits = torch.randint(-2, 3, shape, generator=g).to(dtype)  # few distinct values: many tied maxima
    targets = torch.randint(0, v, shape[:-1], generator=g)
    flat = logits.view(-1, v)
    tg = targets.view(-1)
    tg[: len(tg) // 2] = flat[: len(tg) // 2].argmax(1)  # half the rows hit, so ties at the top are tested
    if v > 1:
        flat[0] = 0
        tg[0] = v - 1  # the target ties with the row's first maximum, later in the row: argmax says miss
        flat[-1] = 0
        tg[-1] = 0  # ... and earlier: argmax says hit
    assert top1_hits(logits, targets) == argmax_count(logits, targets)


def test_ignored_targets_never_hit() -> None:
    logits = torch.randn(4, 6, 10, generator=torch.Generator().manual_seed(1))
    targets = logits.argmax(-1)
    expected = argmax_count(logits, targets)
    targets[0, :3] = -100
    assert expected == logits[0].numel() // 10 * 4
    assert top1_hits(logits, targets) == expected - 3


def test_no_hit_and_empty() -> None:
    logits = torch.randn(5, 8, generator=torch.Generator().manual_seed(2))
    misses = (logits.argmax(-1) + 1) % 8
    assert top1_hits(logits, misses) == 0
    assert top1_hits(torch.zeros(0, 8), torch.zeros(0, dtype=torch.long)) == 0
