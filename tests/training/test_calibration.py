"""Temperature scaling (Guo et al., 2017) and the expected calibration error: pure functions on hand-made numbers,
then ``calibrate`` on a small trained run (fit on valid only, read back by ``load_trained``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from attnlab import trained as use
from attnlab.errors import InputError, ModelLoadError
from attnlab.training import calibrate, load_trained


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.5])
def test_the_fit_recovers_the_temperature_the_labels_were_drawn_at(temperature: float) -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(20000, 3, generator=g) * 3  # (N, C)
    labels = torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=g)[:, 0]  # (N,)
    assert use.fit_temperature(logits, labels) == pytest.approx(temperature, rel=0.05)


def test_the_fit_refuses_mismatched_shapes() -> None:
    with pytest.raises(InputError, match=r"\(4, 2\) and \(3,\)"):
        use.fit_temperature(torch.zeros(4, 2), torch.zeros(3, dtype=torch.long))


def ece(conf: list[float], correct: list[bool], bins: int = 15) -> float:
    return use.expected_calibration_error(torch.tensor(conf, dtype=torch.float64), torch.tensor(correct), bins)


def test_ece_on_hand_made_cases() -> None:
    assert ece([1.0] * 4, [True] * 4) == 0.0  # sure and right
    assert ece([0.9] * 10, [True] * 9 + [False]) == pytest.approx(0.0)  # 90% sure, 90% right
    assert ece([0.8] * 4, [True, False, True, False]) == pytest.approx(0.3)  # 80% sure, 50% right
    # two bins, each half of the texts: |1 - 0.95| / 2 + |0.5 - 0.55| / 2
    assert ece([0.95, 0.95, 0.55, 0.55], [True, True, True, False]) == pytest.approx(0.05)
    # 0.55 and 0.58 share the bin (8/15, 9/15]: |0.5 - 0.565|; 0.52 and 0.58 in 100 bins are apart: (0.48 + 0.58) / 2
    assert ece([0.55, 0.58], [True, False]) == pytest.approx(abs(0.5 - 0.565))
    assert ece([0.52, 0.58], [True, False], bins=100) == pytest.approx(0.5 * 0.48 + 0.5 * 0.58)


def test_reliability_bins_are_equal_width_and_right_closed() -> None:
    conf = torch.tensor([0.5, 0.5 + 1e-9, 1.0], dtype=torch.float64)
    bins = use.reliability_bins(conf, torch.tensor([True, False, True]), bins=2)
    assert bins == [(1, 0.5, 1.0), (2, pytest.approx(0.75), 0.5)]  # 0.5 is in (0, 0.5]; 0.5 + 1e-9 in (0.5, 1]


@pytest.fixture
def run(tiny_classifier: tuple[Path, Path], one_thread: None) -> Path:
    """A tiny trained classifier: this test's copy of the session's one run (tests/conftest.py)."""
    return tiny_classifier[1]


def test_calibrate_fits_on_valid_only_and_load_trained_reads_it(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from attnlab.data import load_data

    seen: list[int] = []
    fit = use.fit_temperature
    from attnlab.training import _classify_use as fitting  # where calibrate looks the fit up

    monkeypatch.setattr(fitting, "fit_temperature", lambda z, y: seen.append(len(y)) or fit(z, y))
    record = calibrate(run)
    splits = load_data(json.loads(load_trained(run).meta["run"])["data"])
    assert seen == [len(splits.valid)] and len(splits.valid) != len(splits.test)  # one fit, on valid
    clf = load_trained(run)
    z = clf.logits(list(splits.valid.texts))
    assert record["temperature"] == fit(z, torch.tensor(list(splits.valid.labels)))
    assert json.loads((run / use.CALIBRATION_FILE).read_text()) == record and (run / use.RELIABILITY_FILE).is_file()
    assert record["valid_nll_after"] <= record["valid_nll_before"] + 1e-12 and record["test_n"] == len(splits.test)

    assert clf.temperature == record["temperature"] != 1.0
    text = splits.test.texts[0]
    want = torch.softmax(clf.logits([text])[0] / record["temperature"], -1).max()
    assert clf.predict([text])[0][1] == pytest.approx(float(want))


def test_a_calibration_of_another_model_is_not_used_and_a_broken_one_is_refused(run: Path) -> None:
    file = run / use.CALIBRATION_FILE
    file.write_text(json.dumps({"temperature": 2.0, "model_sha256": "0" * 64}))
    with pytest.warns(UserWarning, match="fit for another model file"):
        assert load_trained(run).temperature == 1.0
    file.write_text(json.dumps({"temperature": -1.0, "model_sha256": "0" * 64}))
    with pytest.raises(ModelLoadError, match="a temperature is a number > 0"):
        load_trained(run)
    file.write_text("{")
    with pytest.raises(ModelLoadError, match="cannot be read"):
        load_trained(run)


def test_calibrate_replaces_a_stale_or_broken_file_without_a_warning(run: Path) -> None:
    """make train-zh calibrates the bundle over the last bundle's calibration.json: that file is what calibrate
    replaces, so it neither warns about it nor fails on it."""
    import warnings

    file = run / use.CALIBRATION_FILE
    for old in (json.dumps({"temperature": 2.0, "model_sha256": "0" * 64}), "{"):
        file.write_text(old)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            record = calibrate(run)
        assert json.loads(file.read_text()) == record and record["model_sha256"] != "0" * 64
    assert load_trained(run).temperature == record["temperature"]
    assert load_trained(run, calibrated=False).temperature == 1.0


def test_the_bundled_classifier_is_calibrated_on_valid() -> None:
    clf = load_trained("zh-sentiment")
    record = json.loads((use.model_file("zh-sentiment").parent / use.CALIBRATION_FILE).read_text())
    assert clf.temperature == record["temperature"] and record["fit_on"].startswith("valid")
    # what the fit guarantees is on valid (its negative log-likelihood does not rise); on test the bundle must meet
    # issue 30's guard, an ECE of at most 0.03 (the second edition's temperature takes it from 0.021 to 0.030:
    # a temperature fit on valid need not lower the test ECE)
    assert record["valid_nll_after"] <= record["valid_nll_before"]
    assert math.isfinite(record["ece_after"]) and record["ece_after"] <= 0.03
