"""Behaviour suites (CheckList, Ribeiro et al. 2020): what a model gets right beyond one held-out number.

A suite is a JSONL file (a header, then one case per line; docs/training.md documents it): minimum-functionality
cases (MFT: an input and the label or output it must get, or that the model must warn), invariance cases (INV: a
change that must not move the prediction) and directional cases (DIR: a change that must move it one way).
:func:`evaluate_suite` runs one on a classifier or a translator and returns the pass rate per capability and the
failing cases; the package ships a suite for each bundled model (``zh-sentiment``, ``dates-zh``,
``tutorial-en-zh``) in ``attnlab/suites/data/``.

    >>> from attnlab.suites import evaluate_suite, format_report
    >>> print("\\n".join(format_report(evaluate_suite("dates-zh", "dates-zh"))))  # doctest: +SKIP
"""

from ._run import (
    CaseResult,
    Observation,
    SuiteResult,
    batched,
    check_case,
    evaluate_suite,
    format_report,
    model_kind,
    observer,
    pass_rates,
    record_pass_rates,
    run_suite,
    summary,
)
from ._suite import (
    BUNDLED_SUITES,
    EXPECT_KEYS,
    FLOORS,
    KINDS,
    TEST_TYPES,
    Case,
    Suite,
    bundled_suites,
    parse_suite,
    read_suite,
    suite_inputs,
    suite_path,
)

__all__ = [
    "BUNDLED_SUITES",
    "EXPECT_KEYS",
    "FLOORS",
    "KINDS",
    "TEST_TYPES",
    "Case",
    "CaseResult",
    "Observation",
    "Suite",
    "SuiteResult",
    "batched",
    "bundled_suites",
    "check_case",
    "evaluate_suite",
    "format_report",
    "model_kind",
    "observer",
    "parse_suite",
    "pass_rates",
    "read_suite",
    "record_pass_rates",
    "run_suite",
    "suite_inputs",
    "suite_path",
    "summary",
]
