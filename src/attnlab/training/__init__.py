"""Training: one runtime (the loop, checkpoints that resume exactly, data parallelism under torchrun) that runs a task
object; the classifier's, translator's and language model's tasks, their held-out evaluation, calibration and
bundling.  The trained models in use (load, predict, translate, generate) are :mod:`attnlab.trained`'s; their names
are re-exported here for the code written before that package existed."""

import warnings
from typing import Any

from ..trained import (
    Classifier,
    Generated,
    LanguageModel,
    Translation,
    Translator,
    check_sampling,
    load_language_model,
    load_trained,
    load_translator,
)
from ._classify_run import ClassifyTrainConfig, train_classifier
from ._classify_use import calibrate, evaluate_model
from ._config import RunConfig
from ._induction_run import InductionTrainConfig, train_induction
from ._lm_run import LMTrainConfig, train_lm
from ._runtime import Task, accuracy_stderr, lr_at, saved_run
from ._translate_run import ARCHITECTURES, TranslateTrainConfig, build_translator, exact_match, train_translator
from ._translate_use import bundle_translator, calibrate_translator, choose_threshold

__all__ = [
    "ARCHITECTURES",
    "Classifier",
    "ClassifyTrainConfig",
    "Generated",
    "InductionTrainConfig",
    "LMTrainConfig",
    "LanguageModel",
    "RunConfig",
    "Task",
    "TranslateTrainConfig",
    "Translation",
    "Translator",
    "accuracy_stderr",
    "build_translator",
    "bundle_translator",
    "calibrate",
    "calibrate_translator",
    "check_sampling",
    "choose_threshold",
    "evaluate_model",
    "exact_match",
    "load_language_model",
    "load_trained",
    "load_translator",
    "lr_at",
    "saved_run",
    "train_classifier",
    "train_induction",
    "train_lm",
    "train_translator",
]

# The task configs are named after their task (``attnlab train classify`` -> ClassifyTrainConfig); the names they had
# before still work, warn once, and are no longer in __all__.
_DEPRECATED = {"TrainConfig": "ClassifyTrainConfig", "TranslateConfig": "TranslateTrainConfig",
              "InductionConfig": "InductionTrainConfig"}


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        warnings.warn(f"attnlab.training.{name} is now {_DEPRECATED[name]} (the same class); use that name",
                      DeprecationWarning, stacklevel=2)
        value = globals()[_DEPRECATED[name]]
        globals()[name] = value  # later lookups find it here: the warning is said once
        return value
    raise AttributeError(f"module 'attnlab.training' has no attribute {name!r}")
