"""Peak memory of the tensors a call creates, tracked op by op (no allocator or OS statistics needed).

A :class:`~torch.utils._python_dispatch.TorchDispatchMode` sees every ATen op the call runs and the tensors
it returns; each new storage is counted from its creation until the last tensor on it is freed.  Storages
of the inputs are not counted.  What this does not see: scratch memory a single C++ kernel allocates and
frees internally (e.g. inside a fused kernel), so it measures the algorithm's tensors, not the process."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class _Tracker(TorchDispatchMode):
    def __init__(self, external: set[int]) -> None:
        super().__init__()
        self.external = external
        self.size: dict[int, int] = {}
        self.refs: Counter[int] = Counter()
        self.now = 0
        self.peak = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self._track(t)
        return out

    def _track(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key == 0 or key in self.external:
            return
        if key not in self.size:
            self.size[key] = storage.nbytes()
            self.now += self.size[key]
            self.peak = max(self.peak, self.now)
        self.refs[key] += 1
        weakref.finalize(t, self._release, key)

    def _release(self, key: int) -> None:
        self.refs[key] -= 1
        if self.refs[key] == 0:
            del self.refs[key]
            self.now -= self.size.pop(key)


def peak_tensor_bytes(call: Callable[[], Any], inputs: tuple[torch.Tensor, ...]) -> int:
    """The peak, during ``call()``, of the bytes held by tensors it created (its output included)."""
    tracker = _Tracker({t.untyped_storage().data_ptr() for t in inputs})
    with torch.inference_mode(), tracker:
        out = call()
    del out
    return tracker.peak
