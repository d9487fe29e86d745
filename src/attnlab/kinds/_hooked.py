"""The view :mod:`attnlab.circuits` takes of a model with hook points (:class:`TextModel`), built by its kind
(:meth:`attnlab.kinds.Kind.text_model`): how its texts become ids and how its output is read, so that circuits never
ask which kind a model is."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..errors import InputError, TooLongError

__all__ = ["TextModel"]


@dataclass(frozen=True)
class TextModel:
    """A model with hook points as its kind sees it (:meth:`attnlab.kinds.Kind.text_model` builds it): how its texts
    become ids, how its output is read, what its outputs are called.  Circuits never ask which kind it is."""

    name: str
    model: nn.Module
    encoder: Any  # the model's tokenizer (attnlab.data.CharTokenizer for a language model)
    outputs: tuple[str, ...]  # a language model's characters by id, or a classifier's labels
    tokens: Callable[[str], list[str]]  # the tokens of a text, one per id
    window: int  # the most tokens one forward pass reads
    last: Callable[[Tensor], Tensor]  # the output logits (V,) or (C,) of the model's output on one text
    read: Callable[[list[int]], Tensor]  # the output logits of a text of any length, as every surface reads it
    temperature: float = 1.0  # a classifier's calibration: its probabilities are softmax(logits / T), as told
    skip: int | None = None  # an output never named as a target or a distractor (a language model's [UNK])
    top: int | None = 5  # how many outputs ablation shows (None: every one)
    outputs_said: str = "one of its outputs"  # how a message names what may be given as an output
    output_noun: str = "output"  # what one output is, for a table's header ("next" character, "label")

    def encode(self, text: str, what: str, *, whole: bool = False) -> tuple[Tensor, list[str]]:
        """``(ids (1, T), tokens)`` of ``text``; an empty text or one of only unknown characters is refused, and so
        is one longer than one window unless ``whole`` (ablation reads a long text whole, as every surface does;
        patching pairs positions within one window)."""
        if not text:
            raise InputError(f"the {what} text is empty; give a text")
        from ..trained import unknown_warning

        units = self.encoder.units(text)  # the one rule: warn on any unknown character, refuse when all are
        try:
            said = unknown_warning([p for p, _ in units], [u for _, u in units], text=text, model=self.name)
        except InputError as exc:
            raise InputError(f"the {what} text: {exc}") from None
        if said:
            warnings.warn(f"the {what} text: {said}", UserWarning, stacklevel=3)
        ids, tokens = [int(i) for i in self.encoder.encode(text)], self.tokens(text)
        if len(ids) > self.window and not whole:
            raise TooLongError(f"the {what} text is {len(ids)} tokens long but {self.name} reads at most {self.window} "
                               f"in one pass, and patching pairs the positions of one pass; shorten the text",
                               len(ids), self.window)
        return torch.tensor([ids], dtype=torch.long), tokens

    def output_id(self, token: str, what: str) -> int:
        """The id of the output ``token`` (a character of a language model's vocabulary, a classifier's label)."""
        if token in self.outputs and self.outputs.index(token) != self.skip:
            return self.outputs.index(token)
        raise InputError(f"{what} {token!r} is not an output of {self.name}; give {self.outputs_said}")
