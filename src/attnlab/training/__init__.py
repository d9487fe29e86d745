"""Training: one runtime (the loop, checkpoints that resume exactly, data parallelism under torchrun) that runs a task
object; the classifier's, translator's and language model's tasks, their held-out evaluation, calibration and
bundling.  The trained models in use (load, predict, translate, generate) are :mod:`attnlab.trained`'s; their names
are re-exported here for the code written before that package existed.

Each name loads its module on first use: the task configs (``ClassifyTrainConfig``, ...) import no torch, so
``attnlab train ... --help`` shows their defaults at once."""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from ._classify_run import train_classifier
    from ._classify_use import calibrate, evaluate_model, make_portable
    from ._config import ClassifyTrainConfig, InductionTrainConfig, LMTrainConfig, RunConfig, TranslateTrainConfig
    from ._curves import plot_head_scores
    from ._distributed import World
    from ._hits import top1_hits
    from ._induction_run import train_induction
    from ._lm_run import LMTask, fit_mixture, mixture, train_lm
    from ._runtime import Result, Runtime, Task, accuracy_stderr, lr_at, saved_run, seed_everything, start_run
    from ._translate_run import ARCHITECTURES, build_translator, decode_ids, exact_match, train_translator
    from ._translate_use import bundle_translator, calibrate_translator, choose_threshold

_MODULES = {  # public name -> the module that defines it (the configs' module, ._config, imports no torch)
    **dict.fromkeys(("Classifier", "Generated", "LanguageModel", "Translation", "Translator", "check_sampling",
                     "load_language_model", "load_trained", "load_translator"), "..trained"),
    **dict.fromkeys(("ClassifyTrainConfig", "InductionTrainConfig", "LMTrainConfig", "RunConfig",
                     "TranslateTrainConfig"), "._config"),
    "train_classifier": "._classify_run",
    **dict.fromkeys(("calibrate", "evaluate_model", "make_portable"), "._classify_use"),
    "train_induction": "._induction_run",
    **dict.fromkeys(("train_lm", "LMTask", "fit_mixture", "mixture"), "._lm_run"),
    "World": "._distributed",
    "top1_hits": "._hits",
    "plot_head_scores": "._curves",
    **dict.fromkeys(("Result", "Runtime", "Task", "accuracy_stderr", "lr_at", "saved_run", "seed_everything",
                     "start_run"), "._runtime"),
    **dict.fromkeys(("ARCHITECTURES", "build_translator", "decode_ids", "exact_match", "train_translator"),
                    "._translate_run"),
    **dict.fromkeys(("bundle_translator", "calibrate_translator", "choose_threshold"), "._translate_use"),
}

__all__ = [
    "ARCHITECTURES",
    "Classifier",
    "ClassifyTrainConfig",
    "Generated",
    "InductionTrainConfig",
    "LMTask",
    "LMTrainConfig",
    "LanguageModel",
    "Result",
    "RunConfig",
    "Runtime",
    "Task",
    "TranslateTrainConfig",
    "Translation",
    "Translator",
    "World",
    "accuracy_stderr",
    "build_translator",
    "bundle_translator",
    "calibrate",
    "calibrate_translator",
    "check_sampling",
    "choose_threshold",
    "decode_ids",
    "evaluate_model",
    "exact_match",
    "fit_mixture",
    "load_language_model",
    "load_trained",
    "load_translator",
    "lr_at",
    "make_portable",
    "mixture",
    "plot_head_scores",
    "saved_run",
    "seed_everything",
    "start_run",
    "top1_hits",
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
    if name in _MODULES:
        value = getattr(importlib.import_module(_MODULES[name], __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _DEPRECATED:
        warnings.warn(f"attnlab.training.{name} is now {_DEPRECATED[name]} (the same class); use that name",
                      DeprecationWarning, stacklevel=2)
        value = __getattr__(_DEPRECATED[name])
        globals()[name] = value  # later lookups find it here: the warning is said once
        return value
    raise AttributeError(f"module 'attnlab.training' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
