"""Masked-language pre-training of a classifier's encoder on the training split's own texts (no labels).

Each step hides ``mask_rate`` of the real tokens (never ``[CLS]``): 80% become ``[UNK]`` (the tokenizers have no
``[MASK]``; an unknown token is what a hidden one looks like), 10% a random token, 10% stay.  With bigrams on,
every pair that touches a hidden token becomes an unknown pair, so the pair does not give the token away.  The
encoder's states at the hidden positions only go through a head tied to the token embedding (plus a bias), and
the cross-entropy is taken there alone: the output layer costs ``mask_rate`` of what it would at every position.

Deterministic: the masks come from a generator seeded with the run's seed, the order from :func:`data_order`.
Pre-training runs before the first classification step and is not checkpointed on its own: a run killed during
it starts the pre-training again (the same arithmetic), then checkpoints at step 0.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..models import AttentionClassifier
from ._distributed import World
from ._runtime import lr_at

if TYPE_CHECKING:
    from ._classify_run import ClassifyTrainConfig

__all__ = ["mask_tokens", "pretrain_mlm"]

UNK_ID, CLS_ID = 1, 2  # the tokenizers' fixed ids (attnlab.data)


def mask_tokens(ids: Tensor, rate: float, vocab_size: int, g: torch.Generator,
                pad_id: int = 0) -> tuple[Tensor, Tensor]:
    """``(inputs, hidden)``: ``ids (B, L)`` with ``rate`` of the real tokens hidden, and where ``(B, L)`` bool."""
    maskable = (ids != pad_id) & (ids != CLS_ID)  # (B, L)
    hidden = (torch.rand(ids.shape, generator=g) < rate).to(ids.device) & maskable
    roll = torch.rand(ids.shape, generator=g).to(ids.device)  # (B, L): which of the three fates
    random_ids = torch.randint(CLS_ID + 1, max(vocab_size, CLS_ID + 2), ids.shape, generator=g).to(ids.device)
    inputs = torch.where(hidden & (roll < 0.8), torch.full_like(ids, UNK_ID), ids)
    inputs = torch.where(hidden & (roll >= 0.8) & (roll < 0.9), random_ids, inputs)
    return inputs, hidden


def pretrain_mlm(model: AttentionClassifier, ids: Sequence[list[int]], config: ClassifyTrainConfig, w: World,
                 order: Callable[[int], list[int]], collate: Callable[[Sequence[list[int]]], Tensor],
                 log: Callable[[str], None]) -> dict[str, Any]:
    """``config.pretrain_epochs`` epochs of masked-language modelling on ``ids``; the loss per epoch and the time.

    ``order(epoch)`` gives the data order, ``collate`` pads a batch; under torchrun each rank takes its share of every
    batch and the gradients are averaged by hand (the model is not wrapped here).
    """
    vocab = model.config.vocab_size
    bias = torch.zeros(vocab, device=w.device, requires_grad=True)  # (V,) the output bias of the tied head
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW([{"params": params, "weight_decay": config.weight_decay},
                                   {"params": [bias], "weight_decay": 0.0}],
                                  lr=config.pretrain_lr or config.lr, fused=config.fused or None)
    per_epoch = len(ids) // config.batch_size
    total = config.pretrain_epochs * per_epoch
    warmup = round(config.warmup * total)
    peak = config.pretrain_lr or config.lr
    g = torch.Generator().manual_seed(config.seed * 7_919 + 17)
    model.train()
    started, step, losses = time.process_time(), 0, []
    for epoch in range(config.pretrain_epochs):
        run, count = 0.0, 0
        perm = order(epoch)
        for b in range(per_epoch):
            picked = perm[b * config.batch_size: (b + 1) * config.batch_size][w.rank:: w.size]
            step += 1
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, total, warmup, peak)
            loss = _masked_loss(model, collate([ids[i] for i in picked]), bias, config.mask_rate, g)
            loss.backward()
            w.average_gradients([*params, bias])
            if config.clip_norm:
                torch.nn.utils.clip_grad_norm_([*params, bias], config.clip_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            run, count = run + float(loss.detach()), count + 1
        losses.append(run / max(1, count))
        log(f"pre-training epoch {epoch + 1}/{config.pretrain_epochs}: masked-token loss {losses[-1]:.4f} "
            f"(uniform would be {math.log(vocab):.2f})")
    return {"pretrain_losses": losses, "pretrain_steps": step, "pretrain_cpu_s": time.process_time() - started}


def _masked_loss(model: AttentionClassifier, ids: Tensor, bias: Tensor, rate: float, g: torch.Generator) -> Tensor:
    inputs, hidden = mask_tokens(ids, rate, model.config.vocab_size, g, model.config.pad_id)
    states, _ = model.encode(inputs)  # (B, L, M)
    picked = states[hidden]  # (N, M): the hidden positions only
    logits = picked @ model.embed.weight.T + bias  # (N, V)
    if not len(picked):  # a batch where nothing was hidden: a zero loss that still touches every weight
        return states.sum() * 0.0
    return F.cross_entropy(logits.float(), ids[hidden])
