"""Compact trace files: float16 and 8-bit storage keep their documented error bounds, load as float32 and
say what was stored; the default stays exact; values a dtype cannot hold are refused."""

from __future__ import annotations

import json
import struct

import pytest
import torch

import attnlab as al
from attnlab.errors import ConfigError, InputError, TraceFileError

TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]", "."]


def make_trace() -> al.AttentionTrace:
    """Odd sizes; sharp and flat rows, so weights span 1e-6 to near 1; a cross record of another shape."""
    g = torch.Generator().manual_seed(0)
    n = len(TOKENS)
    records = [
        al.AttentionRecord(f"layer.{i}", "self", i, (torch.randn(1, 3, n, n, generator=g) * 4).softmax(-1),
                           TOKENS, TOKENS)
        for i in range(2)
    ]
    records.append(al.AttentionRecord("cross.0", "cross", 0, torch.randn(1, 3, 4, n, generator=g).softmax(-1)))
    return al.AttentionTrace(records, {"model": "synthetic"})


def header(path) -> dict:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n])


def test_default_is_exact_and_adds_nothing(tmp_path):
    trace = make_trace()
    back = al.AttentionTrace.load(trace.save(tmp_path / "t.attn"))
    for a, b in zip(trace.records, back.records, strict=True):
        assert torch.equal(a.weights, b.weights)
    assert back.meta == trace.meta and "stored_dtype" not in back.meta
    assert header(tmp_path / "t.attn")["__metadata__"]["dtype"] == "float32"


@pytest.mark.parametrize(("dtype", "stored", "size"), [("float16", "F16", 0.5), ("uint8", "U8", 0.25)])
def test_compact_files_keep_their_error_bound(tmp_path, dtype, stored, size):
    trace = make_trace()
    exact = trace.save(tmp_path / "exact.attn")
    compact = trace.save(tmp_path / f"{dtype}.attn", dtype=dtype)
    back = al.AttentionTrace.load(compact)
    assert back.meta == {**trace.meta, "stored_dtype": dtype}
    assert {v["dtype"] for k, v in header(compact).items() if k != "__metadata__"} == {stored}
    tensor_bytes = sum(r.weights.numel() for r in trace.records) * 4
    saved = exact.stat().st_size - compact.stat().st_size
    assert saved == pytest.approx(tensor_bytes * (1 - size), abs=64), "the tensors take 1/2 or 1/4 of the space"
    for a, b in zip(trace.records, back.records, strict=True):
        assert b.weights.dtype == torch.float32 and b.weights.shape == a.weights.shape
        assert (b.query_tokens, b.key_tokens, b.kind, b.layer) == (a.query_tokens, a.key_tokens, a.kind, a.layer)
        error = (b.weights.double() - a.weights.double()).abs()
        if dtype == "uint8":
            assert float(error.max()) <= 1 / 510 + 1e-7, float(error.max())
            assert float(error.max()) > 1 / 510 * 0.5, "the bound is tight: 8-bit codes are coarse"
        else:
            assert float(error.max()) <= 2**-12
            big = a.weights > 2**-14  # float16 normals: relative error at most 2**-11
            assert float((error[big] / a.weights[big].double()).max()) <= 2**-11
    again = al.AttentionTrace.load(back.save(tmp_path / "again.attn"))  # re-saved exact: still says where it came from
    assert again.meta["stored_dtype"] == dtype


def test_uint8_codes_are_the_viewers(tmp_path):
    from attnlab.viz import _encode

    trace = make_trace()
    back = al.AttentionTrace.load(trace.save(tmp_path / "u8.attn", dtype="uint8"))
    for a, b in zip(trace.records, back.records, strict=True):
        codes = torch.from_numpy(_encode.quantise(a.weights)).float() / _encode.LEVELS
        assert torch.equal(b.weights, codes)


@pytest.mark.parametrize(
    ("weights", "dtype", "words"),
    [
        (torch.full((1, 1, 2, 2), 1.5), "uint8", ["[0, 1]", "1.5", "float16"]),
        (torch.full((1, 1, 2, 2), -0.2), "uint8", ["[0, 1]", "-0.2"]),
        (torch.full((1, 1, 2, 2), 1e5), "float16", ["overflow float16", "float32"]),
        (torch.full((1, 1, 2, 2), float("nan")), "float16", ["NaN", "float32"]),
    ],
)
def test_values_a_dtype_cannot_hold_are_refused(tmp_path, weights, dtype, words):
    trace = al.AttentionTrace([al.AttentionRecord("odd", "self", 0, weights)])
    with pytest.raises(InputError) as info:
        trace.save(tmp_path / "t.attn", dtype=dtype)
    for word in words:
        assert word in str(info.value), str(info.value)
    assert list(tmp_path.iterdir()) == [], "no partial file"
    trace.save(tmp_path / "t.attn")  # float32 stores anything


def test_unknown_dtype(tmp_path):
    with pytest.raises(ConfigError, match=r"dtype must be one of \('float32', 'float16', 'uint8'\), got 'int4'"):
        make_trace().save(tmp_path / "t.attn", dtype="int4")  # type: ignore[arg-type]


def test_a_file_with_an_unknown_dtype_is_refused(tmp_path):
    from safetensors.torch import save_file

    path = tmp_path / "future.attn"
    meta = {"format": "attnlab.trace", "version": "1", "dtype": "int4", "records": "[]", "meta": "{}"}
    save_file({"r0": torch.zeros(1, 1, 2, 2)}, str(path), metadata=meta)
    with pytest.raises(TraceFileError, match="'int4'"):
        al.AttentionTrace.load(path)
