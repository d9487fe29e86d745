"""Generation people would read (issue 31, section 5): top-p against a float64 reference, the repetition penalty and
no-repeat-n-gram against reference loops, greedy decoding against an uncached argmax loop with the same penalties,
the loop detector on made-up endings, seeds, refusals; `attnlab generate` with the new options, `--attribute`, the
loop warning, and its bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.data import CharTokenizer
from attnlab.errors import InputError
from attnlab.layers import KVCache
from attnlab.models.lm import CausalLM, LMConfig, save_lm
from attnlab.trained import SAMPLING, LanguageModel, check_sampling, find_loop
from attnlab.trained._lm import filter_scores, repeated_ngram_ends

CHARS = "中国人民经济发展北京世界新年讲话希望工作的一个了。，"


def tiny_lm(seed: int = 0, context: int = 16) -> LanguageModel:
    torch.manual_seed(seed)
    vocab = CharTokenizer(("[UNK]", *CHARS))
    model = CausalLM(LMConfig(vocab_size=len(vocab), context=context, d_model=12, n_heads=3, n_layers=2, d_ff=10))
    with torch.no_grad():
        model.embed.weight.normal_(0.0, 1.0)  # a peaked distribution, so that greedy decoding loops
    return LanguageModel(model.eval(), vocab, {"tokenizer": vocab.to_json()}, "tiny")


def test_top_p_keeps_the_smallest_set_that_reaches_p() -> None:
    g = torch.Generator().manual_seed(0)
    for trial in range(30):
        scores = torch.randn(11, generator=g, dtype=torch.float64) * 2
        scores[3] = scores[7]  # a tie
        p = [0.05, 0.3, 0.5, 0.9, 0.999, 1.0][trial % 6]
        kept = torch.isfinite(filter_scores(scores.float(), 0, p))
        probs = torch.softmax(scores, -1).tolist()
        order = sorted(range(11), key=lambda i: -probs[i])
        want, total = set(), 0.0
        for i in order:  # the reference: add the likeliest until the mass reaches p
            if total >= p and want:
                break
            want.add(i)
            total += probs[i]
        got = set(torch.nonzero(kept)[:, 0].tolist())
        if 3 in want ^ got or 7 in want ^ got:  # the tie at the edge may go either way
            assert len(got) == len(want)
            continue
        assert got == want, (p, sorted(got), sorted(want))
    top2 = filter_scores(torch.tensor([1.0, 3.0, 2.0, 0.0]), 2, 1.0)
    assert torch.isfinite(top2).tolist() == [False, True, True, False]


def test_repeated_ngram_ends_against_brute_force() -> None:
    g = torch.Generator().manual_seed(1)
    for _ in range(50):
        ids = torch.randint(0, 4, (int(torch.randint(0, 14, (1,), generator=g)),), generator=g).tolist()
        for n in (1, 2, 3, 4):
            want = {c for c in range(4) if len(ids) + 1 >= n and any(
                [*ids, c][len(ids) + 1 - n:] == ids[i: i + n] for i in range(len(ids) - n + 1))}
            assert repeated_ngram_ends(ids, n) == want, (ids, n)


def reference_greedy(lm: LanguageModel, prompt: str, steps: int, penalty: float, ngram: int) -> list[int]:
    """An uncached argmax decode with the penalty and the n-gram ban written out again (context not exceeded)."""
    seq = lm.encode_prompt(prompt)
    out: list[int] = []
    with torch.no_grad():
        for _ in range(steps):
            scores = lm.model(torch.tensor([seq]))[0, -1].double()
            scores[0] = -math.inf
            for c in set(seq):
                scores[c] = scores[c] / penalty if scores[c] > 0 else scores[c] * penalty
            if ngram and len(seq) >= ngram - 1:
                tail = seq[len(seq) - ngram + 1:] if ngram > 1 else []
                for i in range(len(seq) - ngram + 1):
                    if seq[i: i + ngram - 1] == tail:
                        scores[seq[i + ngram - 1]] = -math.inf
            nxt = int(scores.argmax())
            seq.append(nxt)
            out.append(nxt)
    return out


@pytest.mark.parametrize(("penalty", "ngram"), [(1.0, 0), (1.5, 0), (1.0, 2), (1.3, 3)])
def test_greedy_equals_an_uncached_argmax_with_the_same_penalties(penalty: float, ngram: int) -> None:
    lm = tiny_lm()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = lm.generate("中国人", max_tokens=10, greedy=True, repetition_penalty=penalty, no_repeat_ngram=ngram)
    assert got.ids == reference_greedy(lm, "中国人", 10, penalty, ngram)
    if ngram:
        ids = [*got.prompt_ids, *got.ids]
        grams = [tuple(ids[i: i + ngram]) for i in range(len(ids) - ngram + 1)]
        assert len(grams) == len(set(grams))  # no n-gram twice


def test_greedy_without_penalties_loops_and_says_so_and_the_defaults_do_not() -> None:
    lm = tiny_lm()
    with pytest.warns(UserWarning, match="the generation loops: .* greedy decoding"):
        looped = lm.generate("中国", max_tokens=40, greedy=True, repetition_penalty=1.0, no_repeat_ngram=0)
    assert looped.loop is not None and looped.loop.repeats >= 3
    assert find_loop(looped.ids) == looped.loop
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all
        for seed in range(3):
            assert lm.generate("中国", max_tokens=40, seed=seed).loop is None


def test_sampling_is_seeded() -> None:
    lm = tiny_lm()
    a = lm.generate("中国", max_tokens=30, seed=5, top_k=8, top_p=0.8)
    assert a.ids == lm.generate("中国", max_tokens=30, seed=5, top_k=8, top_p=0.8).ids
    assert a.ids != lm.generate("中国", max_tokens=30, seed=6, top_k=8, top_p=0.8).ids
    assert all(i != 0 for i in a.ids)  # never [UNK]


@pytest.mark.parametrize(("ids", "unit", "repeats", "start"), [
    ([1, 2, 3] * 3, (1, 2, 3), 3, 0),
    ([7, 8, 9, 1, 2] * 4 + [7, 8], (7, 8, 9, 1, 2), 4.4, 0),  # the last unit cut short
    ([5, 6, 1, 2, 1, 2, 1, 2, 1, 2], (1, 2), 4, 2),
    ([4] * 6, (4,), 6, 0),
])
def test_find_loop(ids: list[int], unit: tuple[int, ...], repeats: float, start: int) -> None:
    loop = find_loop(ids)
    assert loop is not None and loop.unit == unit and loop.repeats == repeats and loop.start == start


@pytest.mark.parametrize("ids", [[], [3, 3, 3], [1, 2, 3, 4, 5, 6, 7], [1, 2, 1, 2, 9], [1, 2, 3, 1, 2, 3]])
def test_no_loop(ids: list[int]) -> None:
    assert find_loop(ids) is None


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"top_p": 0.0}, "top_p must be in"), ({"top_p": 1.5}, "top_p must be in"),
    ({"repetition_penalty": 0.5}, "repetition_penalty must be"), ({"no_repeat_ngram": -1}, "no_repeat_ngram must"),
    ({"temperature": True}, "temperature must"),
])
def test_bad_settings_are_refused_named_as_they_were_given(kwargs: dict[str, float], message: str) -> None:
    """A Python call hears its argument's name, a command its option, a JSON body or sampling.json its field."""
    with pytest.raises(InputError, match=f"^{message}"):
        tiny_lm().generate("中国", max_tokens=3, **kwargs)  # type: ignore[arg-type]
    settings = {**SAMPLING, **kwargs}
    option = "--" + message.split()[0].replace("_", "-")
    for style, name in (("cli", option), ("json", f'"{message.split()[0]}"'), ("python", message.split()[0])):
        with pytest.raises(InputError, match=f"^{name} must"):
            check_sampling(3, settings["temperature"], settings["top_k"], settings["top_p"],
                           settings["repetition_penalty"], settings["no_repeat_ngram"], style=style)  # type: ignore[arg-type]


class Negative(CausalLM):
    """Every logit below 0: with every character of its tiny vocabulary in the window, a huge repetition penalty
    sends them all past float32's range (once -inf for all: NaN probabilities)."""

    def forward(self, ids: torch.Tensor, cache: list[KVCache] | None = None) -> torch.Tensor:
        return super().forward(ids, cache) - 100.0


def negative_lm() -> LanguageModel:
    torch.manual_seed(0)
    vocab = CharTokenizer(("[UNK]", "中", "国"))
    model = Negative(LMConfig(vocab_size=len(vocab), context=16, d_model=12, n_heads=3, n_layers=1, d_ff=10))
    return LanguageModel(model.eval(), vocab, {"tokenizer": vocab.to_json()}, "negative")


MODELS = {"tiny": tiny_lm(), "negative": negative_lm()}
# every float (NaN, the infinities, subnormals, 1e-300, 1e308, negatives) and integers, small and past a float's range
NUMBERS = st.one_of(st.floats(), st.integers(), st.sampled_from([1e-300, 5e-324, 1e308, -1e308, 10**400, 2**63, 1, 0]))
FIELDS = ("temperature", "top_k", "top_p", "repetition_penalty")


@given(model=st.sampled_from(sorted(MODELS)), given_settings=st.dictionaries(st.sampled_from(FIELDS), NUMBERS,
                                                                             min_size=1))
@settings(max_examples=300, deadline=None)
def test_every_number_is_either_refused_or_generates(model: str, given_settings: dict[str, float]) -> None:
    """check_sampling either raises InputError (one line) or takes the settings, and then a generation with them
    runs: a character each step, never [UNK], no NaN log-probability."""
    wanted = {**SAMPLING, **given_settings}
    try:
        check_sampling(3, wanted["temperature"], wanted["top_k"], wanted["top_p"], wanted["repetition_penalty"],
                       wanted["no_repeat_ngram"], style="json")
    except InputError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 300
        with pytest.raises(InputError):  # generate checks as check_sampling does
            MODELS[model].generate("中国", max_tokens=3, **wanted)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a loop or an unknown character: said, not wrong
        got = MODELS[model].generate("中国国中", max_tokens=3, **wanted)
    assert len(got.ids) == 3 and 0 not in got.ids
    assert not any(math.isnan(x) for x in got.log_probs), got.log_probs


@pytest.mark.parametrize("temperature", [1e-300, 5e-324, 1e-40])
def test_a_temperature_whose_logits_overflow_takes_the_likeliest_character(temperature: float) -> None:
    """The hand-found 1e-300 (attnlab generate --temperature 1e-300 gave a traceback): the T -> 0 limit, greedy
    decoding with the same penalties, each character with probability 1."""
    lm = tiny_lm()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cold = lm.generate("中国人", max_tokens=10, temperature=temperature, seed=3)
        greedy = lm.generate("中国人", max_tokens=10, greedy=True)
    assert cold.ids == greedy.ids and cold.log_probs == [0.0] * 10


def test_a_repetition_penalty_past_float32_lowers_every_seen_character_and_bans_none() -> None:
    lm = negative_lm()
    got = lm.generate("中国中国", max_tokens=4, repetition_penalty=1e308, no_repeat_ngram=0, seed=1)
    assert len(got.ids) == 4 and 0 not in got.ids and all(math.isfinite(x) for x in got.log_probs)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"temperature": math.nan}, "temperature must be a number > 0, got nan"),
    ({"temperature": math.inf}, "temperature must be a number > 0, got inf"),
    ({"temperature": 10**400}, "temperature must be a number > 0, got an integer of about 401 digits"),
    ({"top_p": math.nan}, "top_p must be in"), ({"repetition_penalty": math.inf}, "repetition_penalty must be"),
    ({"repetition_penalty": 10**400}, "repetition_penalty must be"),
    ({"seed": -1}, "seed must be an integer from 0 to 2\\*\\*63 - 1, got -1"), ({"seed": 2**63}, "seed must be"),
])
def test_nan_infinity_numbers_past_a_float_and_bad_seeds_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(InputError, match=f"^{message}"):
        tiny_lm().generate("中国", max_tokens=3, **kwargs)  # type: ignore[arg-type]


# --- the command ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lm = tiny_lm()
    out = tmp_path_factory.mktemp("lm") / "tiny-lm"
    save_lm(out, lm.model, {"tokenizer": lm.vocab.to_json()})
    return out


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "attnlab.cli", "generate", *args]


@pytest.mark.slow
def test_generate_attributes_and_says_a_loop(folder: Path, tmp_path: Path, child_env: dict[str, str]) -> None:
    out = tmp_path / "gen"
    done = subprocess.run(cli("--model", str(folder), "中国", "--max-tokens", "12", "--attribute", "--top-p", "0.8",
                              "--seed", "3", "--out", str(out)), env=child_env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    lm = tiny_lm()
    want = lm.generate("中国", max_tokens=12, top_p=0.8, seed=3)
    assert done.stdout.splitlines()[0] == "中国" + lm.vocab.decode(want.ids)
    assert "top-p 0.8, repetition penalty 1.2, no-repeat-ngram 4, seed 3" in done.stdout
    record = json.loads((out / "attribution.json").read_text(encoding="utf-8"))
    assert len(record["alti_logit"]) == 12 and len(record["sources"]) == 2 + 12 - 1
    assert record["alti_logit"][0][2:] == [None] * 11  # the first character read the prompt only
    assert (out / "attribution.png").stat().st_size > 1000
    looped = subprocess.run(cli("--model", str(folder), "中国", "--max-tokens", "40", "--greedy",
                                "--repetition-penalty", "1", "--no-repeat-ngram", "0", "--out", str(tmp_path / "g")),
                            env=child_env, capture_output=True, text=True, timeout=300)
    assert looped.returncode == 0, looped.stderr
    lines = [line for line in looped.stderr.splitlines() if "warning" in line]
    assert len(lines) == 1 and "attnlab generate: warning: the generation loops" in lines[0], looped.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("args", "message"), [
    (["--top-p", "0"], "--top-p must be in"), (["--top-p", "2"], "--top-p must be in"),
    (["--repetition-penalty", "0.9"], "--repetition-penalty must be"),
    (["--no-repeat-ngram", "-1"], "--no-repeat-ngram must be"),
])
def test_generate_refuses_bad_settings(folder: Path, tmp_path: Path, child_env: dict[str, str], args: list[str],
                                       message: str) -> None:
    out = tmp_path / "g"
    done = subprocess.run(cli("--model", str(folder), "中国", "--out", str(out), *args), env=child_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert not out.exists()


def test_a_models_own_sampling_defaults_come_from_its_folder(tmp_path: Path) -> None:
    """The bundled induction toy copies by default (its sampling.json: greedy, no penalties), on every surface that
    runs it without settings; any sampling option asked for still wins, and a bad sampling.json is refused on load
    with its path."""
    from attnlab import Model
    from attnlab.errors import ModelLoadError
    from attnlab.trained import SAMPLING_FILE, load_language_model, sampling_defaults

    toy = load_language_model("induction-2l")
    assert toy.defaults == {**SAMPLING, "greedy": True, "repetition_penalty": 1.0, "no_repeat_ngram": 0}
    assert load_language_model("zh-lm").defaults == {**SAMPLING, "greedy": False}
    shown = Model.load("induction-2l").run("abcXYZ+/abcX").output["continuation"]
    assert shown.startswith("YZ+/abcX")  # the repeat, continued
    sampled = Model.load("induction-2l").run("abcXYZ+/abcX", max_tokens=8, greedy=False, temperature=1.0, seed=1)
    assert len(sampled.output["continuation"]) == 8

    torch.manual_seed(0)
    save_lm(tmp_path, tiny_lm().model, {"tokenizer": tiny_lm().vocab.to_json()})
    assert sampling_defaults(tmp_path) == {**SAMPLING, "greedy": False}  # no file: the library's
    for text, message in [("{", "cannot read"), ('{"beam": 2}', "keys among"), ('["greedy"]', "JSON object"),
                          ('{"top_p": 2}', '"top_p" must be in'), ('{"greedy": 1}', "greedy")]:
        (tmp_path / SAMPLING_FILE).write_text(text, encoding="utf-8")
        with pytest.raises(ModelLoadError, match=message) as caught:
            load_language_model(tmp_path)
        assert SAMPLING_FILE in str(caught.value)


def test_generate_samples_a_greedy_model_when_a_temperature_is_given(tmp_path: Path) -> None:
    from attnlab._commands.generate import sampling

    args = type("Args", (), {"temperature": None, "top_k": None, "top_p": None, "repetition_penalty": None,
                             "no_repeat_ngram": None, "greedy": False})()
    greedy = {**SAMPLING, "greedy": True, "repetition_penalty": 1.0, "no_repeat_ngram": 0}
    assert sampling(args, greedy)["greedy"] is True
    args.temperature = 0.7
    assert sampling(args, greedy) == {**greedy, "greedy": False, "temperature": 0.7}
    assert sampling(args)["greedy"] is False and sampling(args)["no_repeat_ngram"] == SAMPLING["no_repeat_ngram"]
