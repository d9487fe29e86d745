"""File writing shared by every output: temporary file in the target folder, then rename."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text", "safetensors_bytes"]


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)`` and rename the result to ``path``: a failure leaves no partial file.

    The parent folder must exist (creating folders is the caller's decision)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def safetensors_bytes(tensors: Mapping[str, Any], metadata: Mapping[str, str]) -> bytes:
    """A safetensors file of ``tensors`` (torch tensors) and ``metadata`` whose bytes depend on nothing else.

    The library writes the metadata in the order of a Rust hash map, which changes with every map it builds, so the
    same weights gave other bytes on every save; here its JSON header is written again with sorted keys (padded with
    spaces to 8 bytes, as the library does, so the tensor data stays aligned; offsets count from after it)."""
    from safetensors.torch import save

    data = save(dict(tensors), metadata=dict(metadata))
    n = int.from_bytes(data[:8], "little")
    header = json.dumps(json.loads(data[8:8 + n]), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    raw = header.encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw + data[8 + n:]
