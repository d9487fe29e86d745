"""The shipped suites on the bundled models: each runs whole, and the capabilities the bundled model is built to
have pass.  The rates are printed (``pytest -s``) so a run shows where each model stands; what a model is not
expected to do yet (warn on invalid dates, sarcasm) is reported, not asserted."""

from __future__ import annotations

import pytest

from attnlab.suites import FLOORS, SuiteResult, evaluate_suite, format_report, pass_rates

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["zh-sentiment", "dates-zh", "tutorial-en-zh"])
def result(request: pytest.FixtureRequest) -> SuiteResult:
    result = evaluate_suite(request.param, request.param)
    print("\n" + "\n".join(format_report(result)[: 2 + len(result.suite.capabilities)]))
    return result


@pytest.mark.slow
def test_the_suite_runs_whole_and_the_expected_capabilities_pass(result: SuiteResult) -> None:
    suite = result.suite
    assert len(result.results) == len(suite.cases) and all(len(r.observations) == len(r.case.inputs)
                                                          for r in result.results)
    rates = pass_rates(result)
    assert list(rates) == list(suite.capabilities)  # every capability reported, in the header's order
    assert sum(r["n"] for r in rates.values()) == len(suite.cases)
    assert len(result.failures) == sum(r["n"] - r["passed"] for r in rates.values())
    for cap, least in FLOORS[suite.name].items():
        assert rates[cap]["rate"] >= least, (cap, [f.describe() for f in result.failures
                                                   if f.case.capability == cap])
