"""Training: the loop, checkpoints that resume exactly, data parallelism under torchrun, evaluation and prediction;
the same runtime for the text classifier and for translators."""

from ._config import TrainConfig
from ._loop import train_classifier
from ._runtime import accuracy_stderr, lr_at
from ._translate import ARCHITECTURES, TranslateConfig, build_translator, exact_match, train_translator
from ._translator import Translation, Translator, bundle_translator, load_translator
from ._use import Classifier, evaluate_model, load_trained

__all__ = [
    "ARCHITECTURES",
    "Classifier",
    "TrainConfig",
    "TranslateConfig",
    "Translation",
    "Translator",
    "accuracy_stderr",
    "build_translator",
    "bundle_translator",
    "evaluate_model",
    "exact_match",
    "load_trained",
    "load_translator",
    "lr_at",
    "train_classifier",
    "train_translator",
]
