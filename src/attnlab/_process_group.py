"""The one place a process group is started: ``torchrun`` sets ``WORLD_SIZE``/``RANK``, and a process that finds
``WORLD_SIZE > 1`` joins the group (or finds it joined already).  Training (:mod:`attnlab.training`) and the
corpus reduction (:mod:`attnlab.analysis.corpus`) both start theirs here."""

from __future__ import annotations

import os

__all__ = ["join_process_group"]


def join_process_group(backend: str = "gloo") -> tuple[int, int, bool]:
    """``(rank, world size, whether this call started the group)``: the group already joined, the one ``torchrun``'s
    environment asks for (started with ``backend``: gloo on CPU, nccl on GPU), or ``(0, 1, False)`` alone."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), False
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and dist.is_available():
        dist.init_process_group(backend)
        return dist.get_rank(), dist.get_world_size(), True
    return 0, 1, False
