"""One process-group start for the package: training's World and the corpus reduction both join through
attnlab._process_group (their torchrun runs are tested in test_resume_and_ddp.py, test_translate.py and
tests/analysis/test_corpus.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import attnlab
from attnlab._process_group import join_process_group


def test_alone_it_is_rank_0_of_1_and_starts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.distributed as dist

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert join_process_group() == (0, 1, False)
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert join_process_group() == (0, 1, False)
    assert not dist.is_initialized()


def test_the_group_is_started_in_one_place() -> None:
    src = Path(attnlab.__file__).parent
    starts = sorted(str(p.relative_to(src)) for p in src.rglob("*.py") if "init_process_group(" in p.read_text())
    assert starts == ["_process_group.py"]
