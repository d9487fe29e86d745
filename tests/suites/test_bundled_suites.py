"""The shipped suites on the bundled models: each runs whole, and the capabilities the bundled model is built to
have pass.  The rates are printed (``pytest -s``) so a run shows where each model stands; what a model is not
expected to do yet (warn on invalid dates, sarcasm) is reported, not asserted."""

from __future__ import annotations

import pytest

from attnlab.suites import SuiteResult, evaluate_suite, format_report, pass_rates

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["zh-sentiment", "dates-zh", "tutorial-en-zh"])
def result(request: pytest.FixtureRequest) -> SuiteResult:
    result = evaluate_suite(request.param, request.param)
    print("\n" + "\n".join(format_report(result)[: 2 + len(result.suite.capabilities)]))
    return result


# capability -> the least pass rate the bundled model must reach, and why it is expected
EXPECTED = {
    # the tokenizer maps full-width forms to half-width (NFKC) before the model sees them
    "zh-sentiment": {"width": 1.0, "whitespace": 0.9,
                     # the clause crops put short phrases about books into training (the 书 accident, issue 19);
                     # the second edition passes 18 of 20 (错别字太多了 and 故事情节很老套 read as praise)
                     "books": 0.9,
                     # the composed phrases of issue 30 (degree, negation, the contrast family) teach these two
                     "negation": 0.9, "contrast": 0.9,
                     # text in another script is warned about (attnlab.data.script_units), brand names are not
                     "other_languages": 1.0},
    # in the task's distribution (test exact match 1.0): every locale and CLDR format, and runs of spaces, which the
    # task's own cleaning collapses
    "dates-zh": {"locales_formats": 1.0, "extra_spaces": 1.0,
                 # 30% of the training sources are in upper, lower or title case (make_dates(cases=0.3))
                 "case": 1.0,
                 # the input, calendar and ambiguity checks warn on every one (attnlab.data.input_problem, ambiguity)
                 "invalid_dates": 1.0, "ambiguous_numeric": 1.0},
    # words outside the lexicon are read as [UNK] with a warning
    "tutorial-en-zh": {"outside_grammar": 1.0},
}


@pytest.mark.slow
def test_the_suite_runs_whole_and_the_expected_capabilities_pass(result: SuiteResult) -> None:
    suite = result.suite
    assert len(result.results) == len(suite.cases) and all(len(r.observations) == len(r.case.inputs)
                                                          for r in result.results)
    rates = pass_rates(result)
    assert list(rates) == list(suite.capabilities)  # every capability reported, in the header's order
    assert sum(r["n"] for r in rates.values()) == len(suite.cases)
    assert len(result.failures) == sum(r["n"] - r["passed"] for r in rates.values())
    for cap, least in EXPECTED[suite.name].items():
        assert rates[cap]["rate"] >= least, (cap, [f.describe() for f in result.failures
                                                   if f.case.capability == cap])
