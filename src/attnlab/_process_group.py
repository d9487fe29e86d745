"""The one place a process group is started: ``torchrun`` sets ``WORLD_SIZE``/``RANK``, and a process that finds
``WORLD_SIZE > 1`` joins the group (or finds it joined already). Training (:mod:`attnlab.training`) and the corpus
reduction (:mod:`attnlab.analysis.corpus`) both start theirs here.

``torch.distributed.nn`` is imported *before* the group starts, on purpose. Its ``functional`` module writes
``group=group.WORLD`` as the default argument of ten functions; imported after the group exists (torch imports it
lazily, from DistributedDataParallel among others), those defaults hold the group for the life of the process, so
``destroy_process_group`` cannot free it and its gloo threads keep running while the interpreter finalises. A gloo
worker that then drops its last collective's tensors must take the GIL; the finalising interpreter ends that thread,
and the process dies of ``std::terminate`` (SIGABRT, "terminate called without an active exception"), which is how
about one 2-rank run in ten failed under load. Imported first, the defaults hold ``None``, and closing the group
joins its threads (tests/training/test_distributed.py checks that no gloo thread outlives it)."""

from __future__ import annotations

import os

__all__ = ["join_process_group", "speaks"]


def join_process_group(backend: str = "gloo") -> tuple[int, int, bool]:
    """``(rank, world size, whether this call started the group)``: the group already joined, the one ``torchrun``'s
    environment asks for (started with ``backend``: gloo on CPU, nccl on GPU), or ``(0, 1, False)`` alone."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), False
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and dist.is_available():
        import torch.distributed.nn  # noqa: F401  (before the group: see the module's docstring)

        dist.init_process_group(backend)
        return dist.get_rank(), dist.get_world_size(), True
    return 0, 1, False


def speaks() -> bool:
    """Whether this process prints what a job prints once (its results, the files it wrote): the one rule for every
    command under ``torchrun`` is that rank 0 speaks and the other ranks stay quiet (warnings and errors excepted);
    a process alone always speaks."""
    return int(os.environ.get("RANK", "0")) == 0
