"""The viewer's page, without a browser: the weight encoding and its error bound, escaping of user
text, the Content-Security-Policy, package data, and the errors of bad input."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnlab as al
from attnlab.capturing import AttentionRecord, AttentionTrace
from attnlab.errors import InputError
from attnlab.viz import _encode
from attnlab.viz.html import (
    SCRIPTS,
    compare_html,
    csp_hash,
    decode_half,
    repr_html,
    save_html,
    to_html,
    viewer_script,
    viewer_style,
)

ROOT = Path(__file__).resolve().parents[2]  # the repository
HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</script>",
    "javascript:alert(1)",
    "'\"`",
    "\u2028\u2029",
    "&amp;&lt;",
    "שָׁלוֹם",
    "🐱‍👤",
    "注意力",
    "\x00\x1b",
]


def softmax_weights(*shape: int, causal: bool = False) -> torch.Tensor:
    scores = torch.randn(*shape) * 2
    if causal:
        q, k = shape[-2:]
        allowed = torch.ones(q, k, dtype=torch.bool).tril(k - q)
        scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1)


def mixed_trace(tokens: list[str] | None = None) -> AttentionTrace:
    """Encoder self-attention (7 tokens), decoder causal (5) and cross (5 x 7) records, 3 heads."""
    src = tokens or [f"s{i}" for i in range(7)]
    tgt = [f"t{i}" for i in range(5)]
    records = [AttentionRecord(f"enc.{i}", "self", i, softmax_weights(1, 3, 7, 7), src, src) for i in range(2)]
    records.append(AttentionRecord("dec.0.self", "causal", 0, softmax_weights(1, 3, 5, 5, causal=True), tgt, tgt))
    records.append(AttentionRecord("dec.0.cross", "cross", 0, softmax_weights(1, 3, 5, 7), tgt, src))
    return AttentionTrace(records, {"model": "tiny", "text": " ".join(src), "n_layers": 2})


def payload(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="attnlab-data">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1))


# ----- encoding --------------------------------------------------------------------------------------
def test_encoding_error_is_at_most_half_a_step_on_a_dense_grid() -> None:
    w = torch.linspace(0, 1, 1_000_001, dtype=torch.float64)
    back = _encode.decode(_encode.encode(w), tuple(w.shape))
    err = np.abs(back - w.numpy())
    assert err.max() <= _encode.MAX_ERROR + 1e-12, f"largest error {err.max()}"
    assert err.max() > 0.99 * _encode.MAX_ERROR  # the bound is tight, not a loose guess
    assert pytest.approx(1 / 510) == _encode.MAX_ERROR


@given(arrays(np.float32, st.tuples(st.integers(1, 3), st.integers(1, 9), st.integers(1, 9)),
              elements=st.floats(0, 1, width=32)))
def test_encoding_round_trip_property(w: np.ndarray) -> None:
    back = _encode.decode(_encode.encode(torch.from_numpy(w)), w.shape)
    assert back.shape == w.shape
    assert np.abs(back - w.astype(np.float64)).max() <= _encode.MAX_ERROR + 1e-7
    assert back.min() >= 0 and back.max() <= 1


def test_encoding_is_deterministic_and_compact() -> None:
    w = softmax_weights(4, 33, 33)
    assert _encode.encode(w) == _encode.encode(w.clone())
    assert len(_encode.encode(w)) < w.numel()  # fewer base64 characters than weights


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.5, 1.5])
def test_encoding_refuses_what_is_not_a_weight(bad: float) -> None:
    w = torch.full((2, 3), 0.25)
    w[1, 2] = bad
    with pytest.raises(InputError, match="weights must"):
        _encode.quantise(w)


def test_float_noise_just_outside_the_range_is_clamped() -> None:
    codes = _encode.quantise(torch.tensor([-1e-7, 1 + 1e-6, 0.5]))
    assert codes.tolist() == [0, 255, 128]


# ----- the page ----------------------------------------------------------------------------------------
def test_payload_round_trips_every_record_within_the_error() -> None:
    trace = mixed_trace()
    data = payload(to_html(trace))
    assert [r["kind"] for r in data["records"]] == ["self", "self", "causal", "cross"]
    assert data["encoding"]["max_error"] == _encode.MAX_ERROR
    for rec, entry in zip(trace.records, data["records"], strict=True):
        assert (entry["heads"], entry["q"], entry["k"]) == tuple(rec.weights.shape[1:])
        assert entry["query_tokens"] == rec.query_tokens and entry["key_tokens"] == rec.key_tokens
        back = _encode.decode(entry["data"], tuple(rec.weights.shape[1:]))
        assert np.abs(back - rec.weights[0].double().numpy()).max() <= _encode.MAX_ERROR + 1e-9


def test_batch_selects_the_input() -> None:
    w = softmax_weights(2, 3, 4, 4)
    trace = AttentionTrace([AttentionRecord("a", "self", 0, w, None, None)])
    entry = payload(to_html(trace, batch=1))["records"][0]
    assert entry["query_tokens"] == ["0", "1", "2", "3"]  # tokens unknown: positions
    assert np.abs(_encode.decode(entry["data"], (3, 4, 4)) - w[1].double().numpy()).max() <= _encode.MAX_ERROR
    with pytest.raises(InputError, match="batch index 2 is out of range"):
        to_html(trace, batch=2)


def test_user_text_cannot_leave_the_data_block() -> None:
    tokens = HOSTILE
    records = [AttentionRecord("enc.0", "self", 0, softmax_weights(1, 2, len(tokens), len(tokens)), tokens, tokens)]
    trace = AttentionTrace(records, {"model": "</script><script>alert(1)</script>", "text": "\ud800 lone"})
    page = to_html(trace)
    block = re.search(r'id="attnlab-data">(.*?)</script>', page, re.S)
    assert block is not None
    assert not set(block.group(1)) & {"<", ">", "&", "\u2028", "\u2029"}
    assert block.group(1).isascii()
    assert page.count("<script") == 2 and page.count("</script>") == 2  # ours: the data and the viewer
    data = payload(page)
    assert data["records"][0]["query_tokens"] == tokens
    assert data["meta"]["model"] == "</script><script>alert(1)</script>"
    assert "alert" not in page.split('id="attnlab-data">')[0]  # nothing of the user's in the head


def test_page_is_self_contained_and_its_policy_allows_only_its_own_script() -> None:
    page = to_html(mixed_trace())
    js = viewer_script()  # the script files joined in order: every one of them is in the page
    css = resources.files("attnlab.viz").joinpath("assets/viewer.css").read_text(encoding="utf-8")
    assert f"<script>{js}</script>" in page and f"<style>{css}</style>" in page
    urls = set(re.findall(r"https?://[^\s\"'`)]+", page))
    # namespace names of the SVG export, never fetched
    assert urls == {"http://www.w3.org/2000/svg", "http://www.w3.org/XML/1998/namespace"}, urls
    assert not re.search(r"\b(src|href)\s*=\s*[\"']?(https?:|//)", page)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    digest = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp.group(1) and csp_hash(js) == f"sha256-{digest}"
    assert f"style-src '{csp_hash(css)}'" in csp.group(1)
    assert "default-src 'none'" in csp.group(1)


def test_a_tail_that_would_close_its_inline_element_is_refused() -> None:
    """The lab joins its own script and style after the viewer's: neither may end the element it sits in."""
    css = resources.files("attnlab.viz").joinpath("assets/viewer.css").read_text(encoding="utf-8")
    assert viewer_style() == css and viewer_style("p { color: red }") == css + "\np { color: red }"
    with pytest.raises(RuntimeError, match="</style"):
        viewer_style("p {} </STYLE><script>alert(1)</script>")
    with pytest.raises(RuntimeError, match="</script"):
        viewer_script("let a = 1; </Script>")


def test_the_script_is_every_script_file_in_order_and_tsc_checks_each() -> None:
    """The page's one script joins the files of SCRIPTS in order; tsconfig.json type-checks that same list."""
    folder = resources.files("attnlab.viz").joinpath("assets")
    files = [folder.joinpath(name).read_text(encoding="utf-8") for name in SCRIPTS]
    js = viewer_script()
    at = [js.index(text) for text in files]
    assert at == sorted(at) and js.startswith("(() => {") and js.rstrip().endswith("})();")
    assert sum(map(len, files)) < len(js) < sum(map(len, files)) + 100  # the files and the wrapper, nothing else
    tsconfig = json.loads(re.sub(r"^\s*//.*$", "", (ROOT / "tsconfig.json").read_text(encoding="utf-8"), flags=re.M))
    # the viewer's files, then attnlab serve's page script, which the lab joins after them (serve/_page.py)
    assert tsconfig["files"] == [*(f"src/attnlab/viz/assets/{name}" for name in SCRIPTS),
                                 "src/attnlab/serve/assets/lab.js"]
    on_disk = {str(p.relative_to(Path(al.viz.html.__file__).parent / "assets")) for p in
               (Path(al.viz.html.__file__).parent / "assets").rglob("*.js")}
    assert on_disk == set(SCRIPTS), "a script file that SCRIPTS does not name never reaches the page"


def test_assets_are_package_data_next_to_the_module() -> None:
    # hatchling's wheel target (packages = ["src/attnlab"]) ships every file under the package folder
    folder = Path(al.viz.html.__file__).parent / "assets"
    assert sorted(p.name for p in folder.iterdir() if p.suffix in {".js", ".css"}) == ["viewer.css", "viewer.js"]


def test_save_html_writes_atomically_and_checks_the_folder(tmp_path: Path) -> None:
    trace = mixed_trace()
    out = al.viz.save_html(trace, tmp_path / "v.html")
    assert out == tmp_path / "v.html" and out.read_text(encoding="utf-8") == to_html(trace)
    assert [p.name for p in tmp_path.iterdir()] == ["v.html"]  # no temporary file left behind
    with pytest.raises(InputError, match="does not exist"):
        save_html(trace, tmp_path / "missing" / "v.html")


def test_bad_input_is_refused_with_the_fix() -> None:
    with pytest.raises(InputError, match="nothing was captured"):
        to_html(AttentionTrace())
    with pytest.raises(InputError, match="AttentionTrace, got Tensor"):
        to_html(torch.zeros(1, 1, 2, 2))  # type: ignore[arg-type]


def test_trace_methods_and_jupyter_repr() -> None:
    trace = mixed_trace(HOSTILE[:7])
    assert al.viz.to_html(trace) == to_html(trace)
    frame = trace._repr_html_()
    assert frame is not None and frame == repr_html(trace)
    assert frame.startswith("<iframe srcdoc=") and 'sandbox="allow-scripts allow-downloads"' in frame
    inner = frame.split('srcdoc="', 1)[1].split('" sandbox=', 1)[0]
    assert "<" not in inner and '"' not in inner  # the whole page is one escaped attribute
    assert AttentionTrace()._repr_html_() is None


# ----- issue 9: head notes, q and k vectors, two traces ---------------------------------------------------
def test_head_notes_travel_cleaned_and_bad_ones_are_refused() -> None:
    trace = mixed_trace()
    trace.meta["heads"] = {"kind": "self", "labels": [["prev", "<b>x</b>", "sep"], ["a", "b", "c"]],
                           "metrics": {"entropy": [[1.5, float("nan"), 2], [0.25, 1, 3]]}}
    notes = payload(to_html(trace))["heads"]
    assert notes["kind"] == "self" and notes["labels"][0] == ["prev", "<b>x</b>", "sep"]
    assert notes["metrics"]["entropy"][0] == [1.5, None, 2.0]  # NaN is no number to show
    assert "heads" not in payload(to_html(mixed_trace()))
    for bad, match in (("labels", "must be a dict"), ({"labels": "abc"}, "labels"), ({"metrics": [1]}, "metrics")):
        trace.meta["heads"] = bad
        with pytest.raises(InputError, match=match):
            to_html(trace)


def test_q_and_k_vectors_travel_as_float16_only_when_captured() -> None:
    trace = mixed_trace()
    assert all("qk" not in r for r in payload(to_html(trace))["records"])
    q, k = torch.randn(1, 3, 7, 16) * 3, torch.randn(1, 3, 7, 16) * 3
    trace.records[0].q, trace.records[0].k = q, k  # type: ignore[attr-defined]  # capture(model, qk=True) sets them
    entry = payload(to_html(trace))["records"][0]
    assert entry["qk"]["d"] == 16
    for text, want in ((entry["qk"]["q"], q), (entry["qk"]["k"], k)):
        back = decode_half(text, (3, 7, 16))
        assert np.abs(back - want[0].double().numpy()).max() <= 2**-11 * float(want.abs().max()) + 1e-7
    trace.records[0].k = torch.randn(1, 3, 6, 16)  # type: ignore[attr-defined]
    with pytest.raises(InputError, match=r"record.k must be \(batch, 3, 7, d_k\)"):
        to_html(trace)


def test_two_traces_make_one_comparison_page(tmp_path: Path) -> None:
    a, b = mixed_trace(), mixed_trace([f"x{i}" for i in range(7)])
    data = payload(to_html([a, b]))
    assert data["format"] == "attnlab.viewer.compare" and len(data["panes"]) == 2
    assert data["panes"][1]["records"][0]["query_tokens"][0] == "x0"
    assert payload(to_html([a])) == payload(to_html(a))
    out = compare_html(a, b, tmp_path / "c.html")
    assert out.read_text(encoding="utf-8") == to_html([a, b])
    with pytest.raises(InputError, match="one trace or two side by side, got a list of 3"):
        to_html([a, b, a])
    with pytest.raises(InputError, match="AttentionTrace, got str"):
        to_html("trace")  # type: ignore[arg-type]


def test_a_long_text_is_kept_whole_for_the_caption() -> None:
    trace = mixed_trace()
    trace.meta["text"] = " ".join(f"word{i}" for i in range(450))
    assert payload(to_html(trace))["meta"]["text"] == trace.meta["text"]


def test_meta_shows_floats_to_four_digits_and_keeps_the_rest() -> None:
    trace = mixed_trace()
    trace.meta = {"label": "pos", "probability": 0.8700472116470337, "n_tokens": 8, "tiny": 1.234567e-7,
                  "merged": False, "nested": {"not": "shown"}}
    meta = payload(to_html(trace))["meta"]
    assert meta == {"label": "pos", "probability": "0.87", "n_tokens": "8", "tiny": "1.235e-07", "merged": "False"}
