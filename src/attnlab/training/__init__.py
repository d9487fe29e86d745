"""Training: one runtime (the loop, checkpoints that resume exactly, data parallelism under torchrun) that runs a task
object; the text classifier's task and the translator's, each with its use (load, predict or translate, evaluate)."""

from ._classify_run import TrainConfig, train_classifier
from ._classify_use import Classifier, calibrate, evaluate_model, load_trained
from ._config import RunConfig
from ._induction_run import InductionConfig, train_induction
from ._lm_run import LMTrainConfig, train_lm
from ._lm_use import Generated, LanguageModel, check_sampling, load_language_model
from ._runtime import Task, accuracy_stderr, lr_at, saved_run
from ._translate_run import ARCHITECTURES, TranslateConfig, build_translator, exact_match, train_translator
from ._translate_use import (
    Translation,
    Translator,
    bundle_translator,
    calibrate_translator,
    choose_threshold,
    load_translator,
)

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
