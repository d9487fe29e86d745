"""The task configs are named after their task; the names they had before still import, warning once."""

from __future__ import annotations

import json
import subprocess
import sys

import attnlab.training as training

OLD = {"TrainConfig": "ClassifyTrainConfig", "TranslateConfig": "TranslateTrainConfig",
       "InductionConfig": "InductionTrainConfig"}


def test_each_task_config_is_named_after_its_task_and_subclasses_run_config() -> None:
    for name in ("ClassifyTrainConfig", "TranslateTrainConfig", "LMTrainConfig", "InductionTrainConfig"):
        assert name in training.__all__
        assert issubclass(getattr(training, name), training.RunConfig), name
    assert not set(OLD) & set(training.__all__)


def test_an_old_name_is_the_same_class_and_warns_a_deprecation_once() -> None:
    code = f"OLD = {OLD!r}" + """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import attnlab.training as t
    same = {old: getattr(t, old) is getattr(t, new) for old, new in OLD.items()}
    from attnlab.training import TrainConfig  # a second lookup of a name already warned about
print(json.dumps([same, [(w.category.__name__, str(w.message)) for w in caught
                         if issubclass(w.category, DeprecationWarning) and 'attnlab' in str(w.message)]]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    same, warned = json.loads(done.stdout.strip().splitlines()[-1])
    assert same == dict.fromkeys(OLD, True)
    assert [w[0] for w in warned] == ["DeprecationWarning"] * len(OLD)  # one per name, not one per lookup
    for (_, message), (old, new) in zip(warned, OLD.items(), strict=True):
        assert f"attnlab.training.{old} is now {new}" in message


def test_the_configs_import_no_torch() -> None:
    """What ``attnlab train TASK --help`` reads: every task's and model's config, and their fields, without torch."""
    code = ("import dataclasses, sys\n"
            "from attnlab.models import ClassifierConfig, LMConfig, Seq2SeqConfig, TransformerSeq2SeqConfig\n"
            "from attnlab.training import (ClassifyTrainConfig, InductionTrainConfig, LMTrainConfig, RunConfig,\n"
            "                              TranslateTrainConfig)\n"
            "n = sum(len(dataclasses.fields(c)) for c in (ClassifierConfig, LMConfig, Seq2SeqConfig,\n"
            "        TransformerSeq2SeqConfig, ClassifyTrainConfig, InductionTrainConfig, LMTrainConfig, RunConfig,\n"
            "        TranslateTrainConfig))\n"
            "LMTrainConfig(max_steps=5)  # a training config is also built without torch\n"
            "print(n, sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'numpy'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    fields, heavy = done.stdout.split(maxsplit=1)
    assert int(fields) > 100 and heavy.strip() == "[]"


def test_the_classifier_config_takes_the_tokenizers_the_data_builds() -> None:
    from attnlab.data import TOKENIZERS

    assert training.ClassifyTrainConfig.TOKENIZERS == TOKENIZERS
