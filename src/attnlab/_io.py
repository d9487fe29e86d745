"""File writing shared by every output (temporary file in the target folder, then rename), and the one reading of
a text file a user gave (UTF-8, or an error naming the file and the byte offset of the first byte that is not)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .errors import InputError

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text", "not_utf8", "read_utf8", "safetensors_bytes"]


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


def read_utf8(path: str | os.PathLike[str], what: str) -> str:
    """The text of the UTF-8 file ``path`` a user gave; bytes that are not UTF-8 are :func:`not_utf8`'s InputError
    (``what`` names the file as the user gave it, e.g. ``"--config 'run.json'"``).  A missing file is the OSError."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(_not_utf8(what, data[exc.start], exc.start, line, exc.reason)) from None


def not_utf8(path: str | os.PathLike[str], what: str) -> InputError:
    """The InputError for the file ``path`` that was found not to be UTF-8 while it was read as text (a stream's
    UnicodeDecodeError counts from its chunk, not from the file's start): its first byte that is not UTF-8, found
    again line by line (a UTF-8 character never holds the byte of a newline)."""
    offset = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return InputError(_not_utf8(what, raw[exc.start], offset + exc.start, number, exc.reason))
            offset += len(raw)
    return InputError(f"{what} is not UTF-8 text; save it as UTF-8 (iconv -t UTF-8 converts it)")


def _not_utf8(what: str, byte: int, offset: int, line: int, reason: str) -> str:
    return (f"{what} is not UTF-8: byte 0x{byte:02X} at byte offset {offset} (line {line}: {reason}); save it as "
            f"UTF-8 (iconv -t UTF-8 converts it, e.g. iconv -f latin1 -t UTF-8 for a Latin-1 file)")
