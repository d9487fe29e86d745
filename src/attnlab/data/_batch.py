"""Token id lists to one padded batch tensor: what every model of attnlab reads."""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["collate"]


def collate(seqs: Sequence[list[int]], device: torch.device, pad_id: int = 0) -> torch.Tensor:
    """Token id lists to a ``(B, L_max)`` int64 tensor, padded with ``pad_id``."""
    length = max((len(s) for s in seqs), default=1)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)  # (B, L_max)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return ids.to(device)
