"""Trained models in use: the classes that load a model ``attnlab train`` wrote (or a bundled one) once and run it,
calibrated, with the warnings a user is owed.  Below ``capturing`` (which runs them under capture, one way for every
surface: :class:`attnlab.Model`) and ``training`` (which fits their calibration and bundles them).

- :class:`Classifier` (:func:`load_trained`): calibrated probabilities, every character of a long text read in
  overlapping windows pooled as the model pools, leave-one-out importance, doubts about a text;
- :class:`Translator` (:func:`load_translator`): greedy or beam translation with its alignment, confidence and doubts;
- :class:`LanguageModel` (:func:`load_language_model`): seeded sampling with a key/value cache;
- :func:`unknown_warning`: the one rule, for every kind, for text a model cannot read (warn when any character or
  token is unknown, refuse when every one is).
"""

from ._classifier import (
    CALIBRATION_FILE,
    ECE_BINS,
    RELIABILITY_FILE,
    Classifier,
    Windows,
    confidence_of,
    expected_calibration_error,
    fit_temperature,
    load_trained,
    model_file,
    reliability_bins,
    sha256,
    windows,
)
from ._lm import (
    SAMPLING,
    SAMPLING_FILE,
    SHOWN_SAMPLING,
    Generated,
    LanguageModel,
    Loop,
    check_sampling,
    find_loop,
    load_language_model,
    sample_next,
    sampling_defaults,
)
from ._translator import CONFIDENCE_KEY, Translation, Translator, load_translator, translator_folder
from ._unknown import SHOWN_UNKNOWN, unknown_warning

__all__ = [
    "CALIBRATION_FILE",
    "CONFIDENCE_KEY",
    "ECE_BINS",
    "RELIABILITY_FILE",
    "SAMPLING",
    "SAMPLING_FILE",
    "SHOWN_SAMPLING",
    "SHOWN_UNKNOWN",
    "Classifier",
    "Generated",
    "LanguageModel",
    "Loop",
    "Translation",
    "Translator",
    "Windows",
    "check_sampling",
    "confidence_of",
    "expected_calibration_error",
    "find_loop",
    "fit_temperature",
    "load_language_model",
    "load_trained",
    "load_translator",
    "model_file",
    "reliability_bins",
    "sample_next",
    "sampling_defaults",
    "sha256",
    "translator_folder",
    "unknown_warning",
    "windows",
]
