"""Training: one runtime (the loop, checkpoints that resume exactly, data parallelism under torchrun) that runs a task
object; the classifier's, translator's and language model's tasks, their held-out evaluation, calibration and
bundling.  The trained models in use (load, predict, translate, generate) are :mod:`attnlab.trained`'s; their names
are re-exported here for the code written before that package existed."""

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
from ._classify_run import TrainConfig, train_classifier
from ._classify_use import calibrate, evaluate_model
from ._config import RunConfig
from ._induction_run import InductionConfig, train_induction
from ._lm_run import LMTrainConfig, train_lm
from ._runtime import Task, accuracy_stderr, lr_at, saved_run
from ._translate_run import ARCHITECTURES, TranslateConfig, build_translator, exact_match, train_translator
from ._translate_use import bundle_translator, calibrate_translator, choose_threshold

__all__ = [
    "ARCHITECTURES",
    "Classifier",
    "Generated",
    "InductionConfig",
    "LMTrainConfig",
    "LanguageModel",
    "RunConfig",
    "Task",
    "TrainConfig",
    "TranslateConfig",
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
