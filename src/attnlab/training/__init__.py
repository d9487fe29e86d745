"""Training: the loop, checkpoints that resume exactly, DDP under torchrun, evaluation and prediction."""

from ._config import TrainConfig
from ._loop import accuracy_stderr, lr_at, train_classifier
from ._use import Classifier, evaluate_model, load_trained

__all__ = ["Classifier", "TrainConfig", "accuracy_stderr", "evaluate_model", "load_trained", "lr_at",
           "train_classifier"]
