"""Checkpoints: a folder per checkpoint, written whole under a temporary name and renamed, then named in
``checkpoints/latest`` (written atomically).  A crash at any moment leaves ``latest`` naming a complete folder;
the previous checkpoint is kept too.  Everything is safetensors or JSON: nothing is unpickled.

A checkpoint folder holds the model as its task saves it (the classifier's ``model.safetensors``, the
translator's ``model.safetensors`` and ``config.json``: a model any ``--model`` option reads),
``optimizer.safetensors`` (AdamW's moments; its param groups as JSON in the header), ``rng.safetensors`` (torch's
and numpy's generator states), ``extra.safetensors`` (more tensors of the run, e.g. the moving average of the
weights, when it has any), ``tokenizer.json`` and ``state.json`` (position in the data, step, schedule, python's
RNG state, metrics so far, early-stopping state, the run's config).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .._io import atomic_write, atomic_write_text
from ..errors import ModelLoadError

__all__ = ["Checkpoint", "latest_checkpoint", "read_checkpoint", "write_checkpoint"]

# How a checkpoint stores its model: the task's ``save(folder, model, meta)`` and ``load(folder) -> (model, meta)``.
SaveModel = Callable[[Path, nn.Module, dict[str, str]], object]
LoadModel = Callable[[Path], tuple[nn.Module, dict[str, str]]]

FOLDER = "checkpoints"
LATEST = "latest"
EXTRA = "extra.safetensors"
KEEP = 2  # the newest checkpoint and the one before it


class Checkpoint:
    """What :func:`read_checkpoint` returns: the model, the optimizer tensors and the run state."""

    def __init__(self, folder: Path, model: nn.Module, meta: dict[str, str],
                 optimizer: dict[str, Any], state: dict[str, Any], rng: dict[str, torch.Tensor],
                 extra: dict[str, torch.Tensor] | None = None) -> None:
        self.folder, self.model, self.meta, self.optimizer, self.state, self.rng = (
            folder, model, meta, optimizer, state, rng)
        self.extra = extra or {}


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], str]:
    sd = optimizer.state_dict()
    tensors = {f"{pid}.{key}": value.detach().cpu().contiguous()
               for pid, slots in sd["state"].items() for key, value in slots.items()}
    return tensors, json.dumps(sd["param_groups"])


def _rng_state() -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    name, keys, pos, has_gauss, cached = np.random.get_state()
    tensors = {"torch": torch.get_rng_state(), "numpy": torch.from_numpy(np.asarray(keys, dtype=np.uint32).copy())}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"cuda.{i}"] = s
    version, internal, gauss = random.getstate()
    info = {"numpy": [name, int(pos), int(has_gauss), float(cached)], "python": [version, list(internal), gauss]}
    return tensors, info


def restore_rng(rng: dict[str, torch.Tensor], info: dict[str, Any]) -> None:
    """Put every generator back where the checkpoint found it."""
    torch.set_rng_state(rng["torch"])
    cuda = [rng[k] for k in sorted(k for k in rng if k.startswith("cuda."))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)
    name, pos, has_gauss, cached = info["numpy"]
    np.random.set_state((name, rng["numpy"].numpy(), pos, has_gauss, cached))
    version, internal, gauss = info["python"]
    random.setstate((version, tuple(internal), gauss))


def write_checkpoint(out: Path, step: int, model: nn.Module, meta: dict[str, str],
                     optimizer: torch.optim.Optimizer, state: dict[str, Any], tokenizer_json: str,
                     save_model: SaveModel, extra: dict[str, torch.Tensor] | None = None) -> Path:
    """Write checkpoint ``step`` under ``out/checkpoints`` and point ``latest`` at it; drop older ones."""
    from safetensors.torch import save_file

    root = out / FOLDER
    root.mkdir(parents=True, exist_ok=True)
    name = f"step-{step:08d}"
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        save_model(tmp, model, meta)
        tensors, groups = _optimizer_tensors(optimizer)
        save_file(tensors, str(tmp / "optimizer.safetensors"), metadata={"param_groups": groups})
        rng, rng_info = _rng_state()
        save_file({k: v.contiguous() for k, v in rng.items()}, str(tmp / "rng.safetensors"))
        if extra:
            save_file({k: v.detach().cpu().contiguous() for k, v in extra.items()}, str(tmp / EXTRA))
        (tmp / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
        (tmp / "state.json").write_text(json.dumps({**state, "rng": rng_info}), encoding="utf-8")
        for f in tmp.iterdir():  # on disk before the folder is named in `latest`
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        final = root / name
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    atomic_write_text(root / LATEST, name)
    for old in sorted(p for p in root.glob("step-*") if p.is_dir())[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(out: Path) -> Path | None:
    """The folder ``out/checkpoints/latest`` names, or None when there is no checkpoint."""
    pointer = out / FOLDER / LATEST
    if not pointer.is_file():
        return None
    folder = out / FOLDER / pointer.read_text(encoding="utf-8").strip()
    if not folder.is_dir():
        raise ModelLoadError(f"{str(pointer)!r} names {folder.name!r}, which is missing; the checkpoint folder "
                             f"was damaged: start a new run with another --out")
    return folder


def read_checkpoint(folder: Path, load_model: LoadModel) -> Checkpoint:
    """Everything :func:`write_checkpoint` wrote; a damaged file is a ModelLoadError naming it."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    model, meta = load_model(folder)
    try:
        opt_path, rng_path, state_path = (folder / "optimizer.safetensors", folder / "rng.safetensors",
                                          folder / "state.json")
        with safe_open(str(opt_path), framework="pt") as f:
            groups = json.loads((f.metadata() or {})["param_groups"])
        opt_tensors = load_file(str(opt_path))
        rng = load_file(str(rng_path))
        state = json.loads(state_path.read_text(encoding="utf-8"))
        extra = load_file(str(folder / EXTRA)) if (folder / EXTRA).exists() else {}
    except Exception as exc:
        raise ModelLoadError(f"the checkpoint {str(folder)!r} is damaged ({type(exc).__name__}: {exc}); "
                             f"delete that folder to resume from the one before it, or start again") from None
    slots: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in opt_tensors.items():
        pid, _, slot = key.partition(".")
        slots.setdefault(int(pid), {})[slot] = value
    return Checkpoint(folder, model, meta, {"state": slots, "param_groups": groups}, state, rng, extra)


def write_json(path: Path, data: Any) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8"))
