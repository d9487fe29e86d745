"""`attnlab train lm`: a tiny run writes what it promises (the n-gram beside the model, head scores and the in-context
learning score in each validation row, the figures), two runs of `make train-lm` write the same bytes, bad text is
refused with one line; generation streams, is seeded and matches an uncached greedy decode (the `attnlab generate`
command's own tests are in tests/cli/test_generate.py); the head detector equals TransformerLens' on the same
attention patterns; `attnlab analyze` reads a language model; `--sequence-parallel` under torchrun gives the losses
of one process, resumes after SIGKILL and is refused in one process."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab.analysis import CAUSAL_PATTERNS
from attnlab.cli import main
from attnlab.data import CharTokenizer, lm_documents, lm_tokenizer, split_documents
from attnlab.errors import InputError
from attnlab.functional.detectors import detection_patterns, detector_scores, repeated_tokens
from attnlab.models.lm import CausalLM, LMConfig
from attnlab.training import LMTrainConfig, load_language_model, train_lm

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent
TIMINGS = {"samples_per_s", "tokens_per_s", "cpu_s"}
TINY_MODEL = {"context": 12, "d_model": 12, "n_heads": 3, "n_layers": 2, "d_ff": 20}
TINY_TRAIN = {"max_steps": 6, "eval_every": 3, "checkpoint_every": 3, "batch_size": 4, "ngram_order": 3,
              "probe_length": 5, "probe_batch": 2, "min_frequency": 1}
WORDS = ["中国", "人民", "经济", "发展", "北京", "世界", "新年", "讲话", "希望", "工作"]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "attnlab.cli", *args]


def write_text(path: Path, paragraphs: int = 120, seed: int = 0) -> Path:
    """Paragraphs of words from a small list, blank lines between them: a text with structure to learn."""
    rng = np.random.default_rng(seed)
    paras = ["".join(WORDS[i] for i in rng.integers(0, len(WORDS), 6)) + "。" for _ in range(paragraphs)]
    path.write_text("\n\n".join(paras) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lm")
    out = root / "run"
    train_lm(write_text(root / "text.txt"), out, model=TINY_MODEL, config=LMTrainConfig(**TINY_TRAIN),
             progress=False, log=lambda _: None)
    return out


@pytest.mark.slow
def test_a_run_writes_the_baseline_the_probes_and_the_figures(tiny_run: Path) -> None:
    for name in ("model.safetensors", "config.json", "tokenizer.json", "run.json", "final.json", "metrics.jsonl",
                 "curves.png", "lm_curve.png", "heads.png", "train.log"):
        assert (tiny_run / name).is_file(), name
    final = json.loads((tiny_run / "final.json").read_text())
    run = json.loads((tiny_run / "run.json").read_text())
    assert set(run["ngram"]["valid_bits_per_char"]) == {"2", "3"}
    best = min(run["ngram"]["valid_bits_per_char"].values())
    assert run["ngram"]["valid_bits_per_char"][str(run["ngram"]["chosen_order"])] == best
    assert final["vs_ngram"] == pytest.approx(1 - final["valid_bits_per_char"] / best)
    valid = [json.loads(line) for line in (tiny_run / "metrics.jsonl").read_text().splitlines()
             if json.loads(line)["split"] == "valid"]
    assert [r["step"] for r in valid] == [3, 6]
    assert final["valid_bits_per_char"] == pytest.approx(-max(r["accuracy"] for r in valid))
    assert valid[0]["cpu_s"] < valid[1]["cpu_s"]
    for row in valid:
        assert set(row["heads"]) == {"previous token", "duplicate token", "induction"}
        assert np.array(row["heads"]["induction"]).shape == (2, 3)  # (layers, heads)
        assert all(0 <= v <= 1 for v in np.ravel(row["heads"]["previous token"]))
        assert np.isfinite(row["icl"]) and row["icl_positions"] == [1, 12]


@pytest.mark.slow
def test_a_run_with_one_validation_draws_its_figures_without_a_warning(tiny_run: Path, tmp_path: Path) -> None:
    """A short run (one validation) used to print three numpy/matplotlib warnings from its figures (a singular x
    range, and the step axis interpolated over one point)."""
    from attnlab.training._lm_run import HEADS_FIGURE, LM_CURVE, lm_figures

    rows = (tiny_run / "metrics.jsonl").read_text().splitlines()
    first = [line for line in rows if json.loads(line)["split"] != "valid" or json.loads(line)["step"] == 3]
    (tmp_path / "metrics.jsonl").write_text("\n".join(first) + "\n")
    (tmp_path / "final.json").write_text((tiny_run / "final.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lm_figures(tmp_path, "one validation")
    assert (tmp_path / LM_CURVE).stat().st_size > 0 and (tmp_path / HEADS_FIGURE).stat().st_size > 0


@pytest.mark.slow
def test_the_probe_scores_the_saved_model(tiny_run: Path) -> None:
    """The head scores of the best step's validation row are the detector's on the saved (best) model."""
    lm = load_language_model(str(tiny_run))
    rows = [json.loads(line) for line in (tiny_run / "metrics.jsonl").read_text().splitlines()]
    final = json.loads((tiny_run / "final.json").read_text())
    last = next(r for r in rows if r["split"] == "valid" and r["step"] == final["best_step"])
    tokens = repeated_tokens(len(lm.vocab), 5, 2, seed=0, low=1)
    scores = detector_scores(lm.model.attention_weights(tokens).double().numpy(), tokens.numpy())
    for name, value in scores.items():
        assert np.allclose(value, last["heads"][name], atol=2e-6), name


@pytest.mark.slow
@pytest.mark.crosscheck
def test_detector_equals_transformer_lens() -> None:
    """detector_scores against TransformerLens' own pattern builders and score, on the same attention patterns."""
    from transformer_lens import head_detector as tl

    torch.manual_seed(0)
    model = CausalLM(LMConfig(vocab_size=9, context=16, d_model=12, n_heads=3, n_layers=2)).eval()
    tokens = torch.cat([repeated_tokens(9, 7, 3, seed=1, low=1), torch.tensor([[3] * 14])])  # repeats by chance too
    weights = model.attention_weights(tokens)  # (N, L, H, Q, Q)
    ours = detector_scores(weights.double().numpy(), tokens.numpy())
    builders = {"previous token": tl.get_previous_token_head_detection_pattern,
                "duplicate token": tl.get_duplicate_token_head_detection_pattern,
                "induction": tl.get_induction_head_detection_pattern}
    for name, build in builders.items():
        theirs = np.zeros((2, 3))
        for n in range(tokens.shape[0]):
            pattern = build(tokens[n: n + 1].cpu())
            assert np.array_equal(pattern.numpy(), detection_patterns(tokens[n])[name]), name
            for layer in range(2):
                for head in range(3):
                    theirs[layer, head] += tl.compute_head_attention_similarity_score(
                        weights[n, layer, head], pattern, exclude_bos=False, exclude_current_token=False,
                        error_measure="mul") / tokens.shape[0]
        worst = float(np.abs(ours[name] - theirs).max())
        assert worst < 1e-6, f"{name}: largest difference {worst:.3g}"


@pytest.mark.slow
def test_the_attention_hook_weights_equal_capture() -> None:
    import attnlab as al

    torch.manual_seed(1)
    model = CausalLM(LMConfig(vocab_size=11, context=9, d_model=12, n_heads=3, n_layers=2)).eval()
    ids = torch.randint(0, 11, (2, 9))
    with torch.no_grad(), al.capture(model) as trace:
        model(ids)
    weights = model.attention_weights(ids)
    for b in range(2):
        assert torch.allclose(trace.stack("causal", b).float(), weights[b], atol=1e-6)


@pytest.mark.slow
def test_generation_is_seeded_and_its_cache_matches_a_full_forward(tiny_run: Path) -> None:
    lm = load_language_model(str(tiny_run))
    a = lm.generate("中国", max_tokens=15, seed=3)
    assert a.ids == lm.generate("中国", max_tokens=15, seed=3).ids
    assert a.slid  # 2 + 15 characters > a context of 12: the window slid
    greedy = lm.generate("中国", max_tokens=8, top_k=1, repetition_penalty=1.0,
                         no_repeat_ngram=0)  # top-1 sampling without the penalties is the argmax
    seq = list(greedy.prompt_ids)
    with torch.no_grad():
        for _ in range(8):
            logits = lm.model(torch.tensor([seq]))[0, -1]
            logits[0] = -float("inf")
            seq.append(int(logits.argmax()))
    assert greedy.ids == seq[2:]
    streamed: list[str] = []
    lm.generate("中国", max_tokens=5, seed=1, on_text=streamed.append)
    assert "".join(streamed) == lm.vocab.decode(lm.generate("中国", max_tokens=5, seed=1).ids)


@pytest.mark.slow
def test_analyze_labels_a_language_models_heads(tiny_run: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "an"
    assert main(["analyze", "--model", str(tiny_run), "--out", str(out)]) == 0
    done = capsys.readouterr()
    report = json.loads((out / "analysis.json").read_text())
    causal = report["causal"]  # the detectors ran on the LM: every pattern, one score per layer and head
    assert causal is not None and set(causal) == set(CAUSAL_PATTERNS)
    assert all(np.shape(v) == np.shape(report["metrics"]["entropy"]) for v in causal.values())
    assert " L  H  label" in done.out


def test_bad_text_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes("第一行\n".encode() + b"caf\xe9\n")
    with pytest.raises(InputError, match="line 2"):
        lm_documents(bad)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(InputError, match="holds no text"):
        lm_documents(empty)
    out = tmp_path / "run"
    for path in (bad, empty, tmp_path / "missing.txt"):
        assert main(["train", "lm", "--data", str(path), "--out", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1, err
        assert not out.exists()


def test_documents_split_by_hash_and_the_vocabulary() -> None:
    docs = [f"文{i}章" for i in range(400)]
    splits = split_documents(docs)
    assert sum(splits.documents) == 400 and all(splits.documents)
    again = split_documents(list(reversed(docs)))
    assert set(splits.valid.split("\n")) == set(again.valid.split("\n"))
    vocab = lm_tokenizer("aab", min_count=2)
    assert vocab.vocabulary == ("[UNK]", "a") and vocab.encode("abz") == [1, 0, 0]
    assert CharTokenizer.from_json(vocab.to_json()) == vocab


def test_peoples_daily_is_read_without_its_marks() -> None:
    docs = lm_documents("peoples-daily")
    assert docs[0].startswith("迈向充满希望的新世纪") and "/" not in docs[0]
    assert 19_000 < len(docs) <= 19_484


@pytest.mark.slow
def test_two_runs_of_make_train_lm_write_the_same_bytes(tmp_path: Path, child_env: dict[str, str]) -> None:
    text = write_text(tmp_path / "text.txt", paragraphs=80)
    config = tmp_path / "tiny.json"
    recipe = json.loads((ROOT / "configs" / "zh-lm.json").read_text(encoding="utf-8"))  # the bundled recipe
    options = {k: recipe["train"][k] for k in ("copy_share", "ngram_mix", "fused")}  # copy windows and the mixture too
    assert recipe["model"]["dropout"] > 0 and options["copy_share"] > 0  # what makes two runs hard to keep equal
    config.write_text(json.dumps({"data": str(text), "model": {**TINY_MODEL, "dropout": recipe["model"]["dropout"]},
                                  "train": {**TINY_TRAIN, **options, "max_steps": 4}}), encoding="utf-8")
    bundles = []
    for name, threads, seed in (("a", "2", "1"), ("b", "3", "2")):  # the target overrides both
        env = {**child_env, "OMP_NUM_THREADS": threads, "PYTHONHASHSEED": seed}
        out = tmp_path / name
        command = ["make", "-s", "-C", str(ROOT), "-o", str(VENV / ".attnlab-installed"), "train-lm", f"VENV={VENV}",
                   f"LM_CONFIG={config}", f"LM_OUT={out}", f"LM_BUNDLED={out}-bundle"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        bundles.append(Path(f"{out}-bundle"))
    a, b = bundles
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name

    def rows(folder: Path) -> list[dict[str, object]]:
        return [{k: v for k, v in json.loads(line).items() if k not in TIMINGS}
                for line in (folder / "metrics.jsonl").read_text().splitlines()]

    assert rows(a) == rows(b)


def tiny_args(text: Path) -> list[str]:
    model = [f"--{k.replace('_', '-')}={v}" for k, v in TINY_MODEL.items()]
    train = [f"--{k.replace('_', '-')}={v}" for k, v in {**TINY_TRAIN, "max_steps": 9, "dropout": 0.1}.items()]
    return ["train", "lm", "--data", str(text), *model, *train, "--no-progress"]


def without_timings(out: Path) -> tuple[list[dict[str, object]], dict[str, object]]:
    rows = [{k: v for k, v in json.loads(line).items() if k not in TIMINGS}
            for line in (out / "metrics.jsonl").read_text().splitlines()]
    final = {k: v for k, v in json.loads((out / "final.json").read_text()).items()
             if k not in ("train_cpu_s", "train_wall_s", "ngram_cpu_s")}
    return rows, final


@pytest.mark.slow
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path: Path, child_env: dict[str, str]) -> None:
    from helpers.cli import kill_at_checkpoint

    args = tiny_args(write_text(tmp_path / "text.txt"))
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    subprocess.run(cli(*args, "--out", str(whole)), env=child_env, check=True, capture_output=True, timeout=120)
    killed_at = kill_at_checkpoint(cli(*args, "--out", str(broken)), child_env, broken, 3)
    done = subprocess.run(cli("train", "lm", "--out", str(broken), "--resume", "--no-progress"), env=child_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"resumed from {killed_at}" in done.stdout
    step = int(killed_at.removeprefix("step-"))  # the last line counts this sitting's CPU as this sitting's
    assert f"over all sittings, this sitting (from step {step}) in all" in done.stdout
    assert without_timings(broken) == without_timings(whole)  # every step, every probe, bit for bit
    assert (broken / "model.safetensors").read_bytes() == (whole / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_two_torchrun_ranks_match_one_process(tmp_path: Path, child_env: dict[str, str]) -> None:
    from helpers.cli import one_and_two_ranks

    args = [a for a in tiny_args(write_text(tmp_path / "text.txt")) if not a.startswith("--dropout")]
    one, two = tmp_path / "one", tmp_path / "two"
    one_and_two_ranks(cli(), args, child_env, one, two)
    (rows_one, final_one), (rows_two, final_two) = without_timings(one), without_timings(two)
    losses = [(float(a["loss"]), float(b["loss"])) for a, b in zip(rows_one, rows_two, strict=True)]  # type: ignore[arg-type]
    worst = max(abs(a - b) for a, b in losses)
    print(f"largest loss difference, 2 ranks vs 1 process: {worst:.3g}")
    assert worst <= 1e-5
    assert final_one["test_characters"] == final_two["test_characters"]
    assert final_one["ngram_valid_bits_per_char"] == final_two["ngram_valid_bits_per_char"]


def sequence_parallel_args(text: Path, context: int) -> list[str]:
    """The tiny run without dropout (kernel "ring" has none), at ``context``."""
    args = [a for a in tiny_args(text) if not a.startswith(("--dropout", "--context"))]
    return [*args, f"--context={context}"]


@pytest.mark.slow
@pytest.mark.parametrize("context", [12, 11])  # 4 zigzag chunks of 3; 11 pads to 12 (the last chunk part padding)
def test_sequence_parallel_ranks_match_one_process(tmp_path: Path, child_env: dict[str, str], context: int) -> None:
    from helpers.cli import one_and_two_ranks

    args = sequence_parallel_args(write_text(tmp_path / "text.txt"), context)
    one, two = tmp_path / "one", tmp_path / "two"
    stdout = one_and_two_ranks(cli(), args, child_env, one, two, ranks_only=["--sequence-parallel"])
    assert "sequence-parallel: 1/2 of every window each" in stdout
    (rows_one, final_one), (rows_two, final_two) = without_timings(one), without_timings(two)
    assert [r["split"] for r in rows_one] == [r["split"] for r in rows_two]
    losses = [(float(a["loss"]), float(b["loss"])) for a, b in zip(rows_one, rows_two, strict=True)]  # type: ignore[arg-type]
    worst = max(abs(a - b) for a, b in losses)
    print(f"context {context}: largest loss difference over {len(losses)} rows, 2 sequence-parallel ranks vs 1 "
          f"process: {worst:.3g}")
    assert worst <= 1e-5
    assert final_one["test_characters"] == final_two["test_characters"]
    # the saved model is a normal one: the model's own kernel, weights those of one process
    model_one, model_two = load_language_model(one).model, load_language_model(two).model
    assert model_two.config == model_one.config and model_two.config.kernel == "dense"
    weights = max(float((a - b).abs().max()) for a, b in zip(model_one.state_dict().values(),
                                                              model_two.state_dict().values(), strict=True))
    print(f"largest weight difference: {weights:.3g}")
    assert weights <= 1e-5


@pytest.mark.slow
def test_sequence_parallel_resumes_after_sigkill(tmp_path: Path, child_env: dict[str, str]) -> None:
    from helpers.cli import kill_at_checkpoint

    args = [*sequence_parallel_args(write_text(tmp_path / "text.txt"), 12), "--sequence-parallel"]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                "-m", "attnlab.cli"]
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    subprocess.run([*torchrun, *args, "--out", str(whole)], env=child_env, check=True, capture_output=True,
                   timeout=180)
    killed_at = kill_at_checkpoint([*torchrun, *args, "--out", str(broken)], child_env, broken, 3)
    done = subprocess.run([*torchrun, "train", "lm", "--out", str(broken), "--resume", "--no-progress"],
                          env=child_env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resumed from {killed_at}" in done.stdout, done.stdout
    assert without_timings(broken) == without_timings(whole)
    assert (broken / "model.safetensors").read_bytes() == (whole / "model.safetensors").read_bytes()


def test_sequence_parallel_is_refused_in_one_process_and_with_other_kernels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = write_text(tmp_path / "text.txt")
    exact = "use --kernel dense or memory_efficient without kernel options and --dropout 0"
    for extra, said in (([], "run it under torchrun with 2 or more"), (["--kernel=local"], exact),
                        (["--dropout=0.1"], exact)):
        out = tmp_path / "out"
        assert main([*sequence_parallel_args(text, 12), *extra, "--sequence-parallel", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists()


def test_distillation_from_the_ngram_mixes_the_two_cross_entropies() -> None:
    """``ngram_teach=a``: the step's objective is (1 - a) x the cross-entropy against each next character plus a x
    the cross-entropy against the chosen Kneser-Ney model's distribution after each position (computed here from
    ``KneserNey.distribution``, one history at a time); the loss the run reports stays the plain one."""
    from attnlab.errors import ConfigError
    from attnlab.models.kneser_ney import KneserNey
    from attnlab.training._distributed import world
    from attnlab.training._lm_run import LMTask

    rng = np.random.default_rng(0)
    stream = rng.integers(1, 9, 400).astype(np.int64)
    vocab = CharTokenizer(("[UNK]", *"abcdefgh"))
    torch.manual_seed(0)
    net = CausalLM(LMConfig(vocab_size=9, context=8, d_model=12, n_heads=3, n_layers=1, d_ff=10))
    ngram = KneserNey.fit(stream, 3, 9)
    for a in (0.0, 0.3, 1.0):
        task = LMTask(None, {"train": stream}, vocab, net, LMTrainConfig(ngram_teach=a, batch_size=4), {},  # type: ignore[arg-type]
                      world("cpu"), print)
        task.teacher = ngram
        items = [3, 50, 120, 300]
        got = task.loss(net, items)
        x, y = task.windows("train", items, 8)
        logp = torch.log_softmax(net(x).float(), -1)  # (B, L, V)
        hard = -logp.gather(-1, y[..., None]).mean()
        target = torch.tensor(np.stack([[ngram.distribution(stream[s: s + t + 1]) for t in range(8)] for s in items]),
                              dtype=torch.float32)  # (B, L, V)
        soft = -(target * logp).sum(-1).mean()
        assert float(got.objective.detach()) == pytest.approx(float((1 - a) * hard + a * soft), rel=1e-5), a
        assert got.loss == pytest.approx(float(hard) * y.numel(), rel=1e-5)
    with pytest.raises(ConfigError, match=r"ngram_teach must be a share in \[0, 1\], got 1.5; the n-gram.s share"):
        LMTrainConfig(ngram_teach=1.5)
    with pytest.raises(ConfigError, match="sequence-parallel"):
        LMTrainConfig(ngram_teach=0.5, sequence_parallel=True)


def test_cross_fitted_teachers_teach_the_half_they_were_not_fit_on() -> None:
    """``ngram_teach_halves``: a window of the first half of train is taught by the n-gram fit on the second half,
    a window that starts within a context of the middle or later by the one fit on the first half (each
    distribution computed here one history at a time); no halves without a teacher."""
    from attnlab.errors import ConfigError
    from attnlab.models.kneser_ney import KneserNey
    from attnlab.training._distributed import world
    from attnlab.training._lm_run import LMTask

    rng = np.random.default_rng(1)
    stream = np.concatenate([rng.integers(1, 5, 200), rng.integers(5, 9, 200)]).astype(np.int64)  # halves differ
    vocab = CharTokenizer(("[UNK]", *"abcdefgh"))
    torch.manual_seed(0)
    net = CausalLM(LMConfig(vocab_size=9, context=8, d_model=12, n_heads=3, n_layers=1, d_ff=10))
    config = LMTrainConfig(ngram_teach=0.5, ngram_teach_halves=True, batch_size=4)
    task = LMTask(None, {"train": stream}, vocab, net, config, {}, world("cpu"), print)  # type: ignore[arg-type]
    assert task.middle == 200
    first, second = KneserNey.fit(stream[:200], 3, 9), KneserNey.fit(stream[200:], 3, 9)
    task.halves = (first, second)
    items = [3, 150, 192, 300]  # 192 = middle - context: the first one the first half's n-gram teaches
    x, _ = task.windows("train", items, 8)
    got = task.taught(x.numpy(), items)
    for b, (s, teacher) in enumerate(zip(items, (second, second, first, first), strict=True)):
        want = np.stack([teacher.distribution(stream[s: s + t + 1]) for t in range(8)])
        np.testing.assert_allclose(got[b], want, rtol=1e-5, atol=1e-7)
    assert not np.allclose(got[0], first.distributions(x[:1].numpy())[0], atol=1e-3)  # the halves do differ
    with pytest.raises(ConfigError, match="there is none: ngram_teach is 0"):
        LMTrainConfig(ngram_teach_halves=True)


def test_a_run_with_cross_fitted_teachers_records_them(tmp_path: Path) -> None:
    """``--ngram-teach-halves`` through the command: the run fits the two teachers and records their valid figures,
    each a real n-gram score (finite, above the whole split's, which saw twice the text)."""
    out = tmp_path / "run"
    args = [*tiny_args(write_text(tmp_path / "text.txt")), "--max-steps=2", "--ngram-teach=0.5"]
    assert main([*args, "--ngram-teach-halves", "--out", str(out)]) == 0
    ngram = json.loads((out / "run.json").read_text(encoding="utf-8"))["ngram"]
    halves = ngram["teacher_halves_valid_bits_per_char"]
    whole = ngram["valid_bits_per_char"][str(ngram["chosen_order"])]
    assert len(halves) == 2 and all(math.isfinite(h) and h > whole for h in halves), (halves, whole)
    assert "teachers: order" in (out / "train.log").read_text(encoding="utf-8")
