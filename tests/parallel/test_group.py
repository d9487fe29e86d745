"""`attnlab.parallel.process_group` alone, and the refusal of ring attention and sequence parallelism under torchrun
without a group (every rank would attend over its own shard alone). The 2-rank runs are in test_docs_torchrun.py."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from attnlab.errors import ConfigError
from attnlab.parallel import ALONE, process_group, ring_attention, sequence_parallel


def test_alone_it_is_rank_0_of_1_and_starts_nothing() -> None:
    with process_group() as (rank, world):
        assert (rank, world) == (0, 1) and not dist.is_initialized()
        with sequence_parallel(7) as sp:
            assert (sp.rank, sp.world) == (0, 1)
    with pytest.raises(ConfigError, match=r"backend='tcp'.*'gloo'"), process_group("tcp"):
        pass


def test_under_torchrun_without_a_group_ring_and_sequence_parallel_refuse_naming_the_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    x = torch.randn(1, 2, 5, 3)
    with pytest.raises(ConfigError, match=r"WORLD_SIZE=2.*attnlab\.parallel\.process_group"), \
            sequence_parallel(10):
        pass
    with pytest.raises(ConfigError, match=r"ring_attention runs under torchrun.*process_group"):
        ring_attention(x, x, x)
    out = ring_attention(x, x, x, group=ALONE)  # asked for alone: the caller's choice, no refusal
    assert out.shape == x.shape
