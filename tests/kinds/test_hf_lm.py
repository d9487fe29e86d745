"""A user's own Hugging Face causal language model (issue 41): a folder made as a user makes one (random weights of
each architecture, ``save_pretrained``, a tokenizer built with ``tokenizers``) is found as the kind ``hf-lm`` and served
by every surface its capabilities name; its greedy continuation is transformers' own; the instruments leave it
unchanged; bad folders and bad requests are one line and write nothing."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import hf_models
from helpers.cli import fingerprint, one_error_line

import attnlab as al
from attnlab import circuits as C
from attnlab.cli import main
from attnlab.errors import ModelLoadError

pytestmark = pytest.mark.slow

IOI = "When Mary and John went to the store, John gave a drink to"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf")
    return {a: hf_models.folder(a, root / a) for a in ("gpt2", "llama")}


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_found_as_its_kind_and_its_greedy_continuation_is_transformers_own(folders: dict[str, Path],
                                                                          arch: str) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert al.locate(folders[arch]).kind == "hf-lm"
    model = al.Model.load(folders[arch])
    with warnings.catch_warnings():  # (a random model's greedy text may loop, which is said)
        warnings.simplefilter("ignore")
        out = model.run(IOI, max_tokens=8, greedy=True, repetition_penalty=1.0, no_repeat_ngram=0)
    tok = AutoTokenizer.from_pretrained(folders[arch])
    ref = AutoModelForCausalLM.from_pretrained(folders[arch]).eval()
    ids = tok(IOI, return_tensors="pt")["input_ids"]
    want = ref.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=0)[0, ids.shape[1]:]
    assert out.result.ids == want.tolist()
    assert out.answer == tok.decode(want)
    assert out.trace is not None and len(out.trace.records) == 2  # two layers of causal attention


def test_the_instruments_leave_the_model_as_it_was(folders: dict[str, Path]) -> None:
    model = al.Model.load(folders["llama"])
    net = model.loaded.model
    ids = torch.tensor([model.loaded.ids(IOI)])
    with torch.no_grad():
        before = net(input_ids=ids).logits.clone()
    state = {k: v.clone() for k, v in net.state_dict().items()}
    tm = model.spec.text_model(model)
    C.patch_texts(tm, IOI, IOI.replace("John gave", "Mary gave"), what="heads")
    C.patch_texts(tm, IOI, IOI.replace("John gave", "Mary gave"), what="path", receiver=(1, 0), into="v")
    C.ablate_text(tm, IOI, 1, 2)
    C.composition_scores(net)
    C.logit_lens(net, ids)
    model.spec.analysis_trace(model, IOI)
    model.run(IOI, max_tokens=3)
    with torch.no_grad():
        after = net(input_ids=ids).logits
    assert torch.equal(before, after)
    assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())
    assert net.config._attn_implementation == "sdpa"


def test_every_command_serves_it(folders: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = str(folders["gpt2"])
    clean, corrupt = IOI, IOI.replace("John gave", "Mary gave")
    runs = {
        "generate": ["generate", "--model", f, "When Mary", "--max-tokens", "5"],
        "show": ["show", "--model", f, "When Mary and John"],
        "analyze": ["analyze", "--model", f, IOI],
        "heads": ["patch", "--model", f, "--clean", clean, "--corrupt", corrupt, "--target", " Mary",
                  "--distractor", " John"],
        "path": ["patch", "--model", f, "--clean", clean, "--corrupt", corrupt, "--what", "path", "--receiver", "1.1",
                 "--into", "q"],
        "circuit": ["circuit", "--model", f],
    }
    for name, argv in runs.items():
        assert main([*argv, "--out", str(tmp_path / name)]) == 0, name
        assert any((tmp_path / name).iterdir()), name
    printed = capsys.readouterr().out
    assert "tokens, mean log-probability" in printed and "logit difference ' Mary' - ' John'" in printed


def _copy(src: Path, dst: Path, drop: tuple[str, ...] = ()) -> Path:
    shutil.copytree(src, dst)
    for name in drop:
        (dst / name).unlink()
    return dst


def test_bad_folders_are_one_line(folders: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    no_weights = _copy(folders["gpt2"], tmp_path / "no-weights", ("model.safetensors",))
    no_tokenizer = _copy(folders["gpt2"], tmp_path / "no-tok", ("tokenizer.json",))
    other = _copy(folders["gpt2"], tmp_path / "other-shape")
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "n_embd": 128}))
    for folder, said in ((no_weights, "holds no safetensors weights"), (no_tokenizer, "but no tokenizer"),
                         (other, "cannot load")):
        with pytest.raises(ModelLoadError, match=said):
            al.Model.load(folder)
        out = tmp_path / f"out-{folder.name}"
        assert main(["generate", "--model", str(folder), "When", "--out", str(out)]) == 2
        assert said in one_error_line(capsys, "generate") and not out.exists()


def test_bad_requests_are_one_line_and_write_nothing(folders: dict[str, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    f = str(folders["llama"])
    before = fingerprint(tmp_path)
    cases = [
        (["patch", "--model", f, "--clean", IOI, "--corrupt", "When Mary"], "patch", "position by position"),
        (["patch", "--model", f, "--clean", IOI, "--corrupt", IOI, "--target", " Maryland and"], "patch",
         "one token of its tokenizer"),
        (["patch", "--model", "minilm", "--clean", "a b", "--corrupt", "a c", "--what", "path"], "patch", ""),
        (["generate", "--model", f, "x " * 80], "generate", "reads at most 64"),
        (["analyze", "--model", f, "x " * 80], "analyze", "takes at most 64"),
    ]
    for argv, command, said in cases:
        assert main([*argv, "--out", str(tmp_path / "x")]) == 2, argv
        assert said in one_error_line(capsys, command), argv
    assert fingerprint(tmp_path) == before


def test_the_lab_serves_a_folder_beside_the_bundled_models(folders: dict[str, Path]) -> None:
    from fastapi.testclient import TestClient

    from attnlab.serve import Lab, Limits, catalogue, create_app

    client = TestClient(create_app(Lab(catalogue([folders["llama"]], bundled=False)), Limits(), hosts=["testserver"]))
    (entry,) = client.get("/api/models").json()["models"]
    assert entry["kind"] == "hf-lm" and set(entry["can"]) == {"analyze", "sample", "ablate", "patch", "attribute",
                                                                "qk"}
    r = client.post("/api/run", json={"model": entry["name"], "text": "When Mary and John went",
                                      "sampling": {"greedy": True}})
    assert r.status_code == 200 and r.json()["output"]["continuation"]
    r = client.post("/api/ablate", json={"model": entry["name"], "text": "When Mary and John", "layer": 1, "head": 3})
    assert r.status_code == 200 and r.json()["outputs"]
    r = client.post("/api/attribute", json={"model": entry["name"], "text": "When Mary and John went",
                                            "sampling": {"greedy": True}})
    assert r.status_code == 200 and list(r.json()["methods"]) == ["gradient x input"], r.text[:300]
    r = client.post("/api/run", json={"model": entry["name"], "text": "word " * 100})
    assert r.status_code == 413 and "reads at most 64" in r.json()["error"]
    # QK attribution of one cell (docs/circuits-api.md: the eager run's own queries and keys)
    from attnlab.circuits import load_text_model, qk_attribution

    r = client.post("/api/qk", json={"model": entry["name"], "text": "When Mary and John went", "layer": 1, "head": 3,
                                     "query": 6, "key": 2})
    assert r.status_code == 200, r.text[:300]
    tm = load_text_model(str(folders["llama"]))
    ids, tokens = tm.encode("When Mary and John went", "given")
    want = qk_attribution(tm.model, ids, 1, 3, 6, 2)
    assert r.json()["tokens"] == tokens and r.json()["score"] == pytest.approx(want.score, rel=1e-6)


def test_a_generation_is_attributed_by_gradient_x_input(folders: dict[str, Path], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Gradient x input of each generated token at the token embeddings equals the derivative of its logit as that
    source's embedding is scaled (a central difference in float64: GPT-2, whose LayerNorm computes in the model's
    dtype; the Llama family's RMSNorm computes in float32); ALTI-Logit is said to be left out."""
    from attnlab.analysis import attribute_generation

    model = al.Model.load(folders["gpt2"])
    out = model.run("When Mary and John", max_tokens=3, greedy=True)
    got = attribute_generation(model.loaded.model, out.result.prompt_ids, out.result.ids)
    assert np.isnan(got.alti_logit).all() and np.isnan(got.agreement())
    net = model.loaded.model.double()
    try:
        ids = torch.tensor([got.ids[:-1]])
        emb = net.get_input_embeddings()(ids).detach()
        g, row = 1, len(out.result.prompt_ids)  # the second generated token, chosen at this row
        for s in (0, row - 1, row):
            def logit(alpha: float, s: int = s) -> float:
                e = emb.clone()
                e[0, s] *= 1 + alpha
                with torch.no_grad():
                    return float(net(inputs_embeds=e, use_cache=False).logits[0, row, got.ids[row + 1]])

            numeric = (logit(1e-5) - logit(-1e-5)) / 2e-5
            assert abs(numeric - got.grad_x_input[g, s]) < 1e-6 * max(1.0, abs(numeric)), (s, numeric)
    finally:
        net.float()
    assert main(["generate", "--model", str(folders["llama"]), "When Mary", "--max-tokens", "4", "--attribute",
                 "--out", str(tmp_path / "att")]) == 0
    assert "ALTI-Logit is left out" in capsys.readouterr().out
    record = json.loads((tmp_path / "att" / "attribution.json").read_text())
    assert record["spearman_agreement"] is None and len(record["grad_x_input"]) == 4
