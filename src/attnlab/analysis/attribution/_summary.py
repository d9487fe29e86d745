"""What ``attnlab analyze --attribution`` reports of one text's attributions (:func:`summarize_attribution`): each
method rolled out over the layers, the JSON it writes, and for a classifier the prediction and each input token's
share of it by every method, as one table.

Letters: L layers, n tokens.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._text import TextAttribution

__all__ = ["METHOD_TITLES", "AttributionSummary", "summarize_attribution"]

# the rolled-out methods, their figure titles (the figure files are the names with "-" for "_")
METHOD_TITLES = {
    "norm": "norm-based attention ||a f(x)||, rolled out (Kobayashi et al.)",
    "value_zeroing": "value zeroing, rolled out (Mohebbi et al.)",
    "alti": "ALTI, rolled out (Ferrando et al.)",
}
# the per-token table's columns: method -> (header, what its number is)
_COLUMNS = {
    "norm": ("norm", "share"),
    "value_zeroing": ("v-zero", "share"),
    "alti": ("ALTI", "share"),
    "alti_logit": ("ALTI-logit", "logit"),
    "grad_x_input": ("grad x in", "x . dp/dx"),
}


@dataclass(frozen=True)
class AttributionSummary:
    """One text's attributions as ``analyze`` reports them: ``maps`` ``{method: (n, n)}`` each method rolled out
    over the layers (share of output ``i`` drawn from input ``j``), and for a classifier ``per_token``
    ``{method: (n,)}``, each input token's part in the prediction."""

    tokens: list[str]
    attribution: TextAttribution
    maps: dict[str, np.ndarray]
    per_token: dict[str, np.ndarray] | None

    def to_json(self) -> dict[str, Any]:
        """``analysis.json``'s ``attribution``: the rolled-out maps and the per-layer matrices, and for a classifier
        the label, the prediction, the reader, the embedding mixing and each method's share per token."""
        att = self.attribution
        doc: dict[str, Any] = {f"{name}_rollout": matrix.tolist() for name, matrix in self.maps.items()}
        doc |= {f"{name}_per_layer": getattr(att, name).tolist() for name in self.maps}  # (L, n, n) each
        if att.grad_x_input is not None:
            doc["grad_x_input"] = att.grad_x_input.tolist()
            doc["label"] = att.label
        if att.alti_logit is not None:
            doc["alti_logit"] = att.alti_logit.tolist()
        if att.prediction is not None:
            doc["predicted"] = {"label": att.prediction[0], "probability": att.prediction[1]}
        if att.reader is not None and att.embedding is not None and self.per_token is not None:
            doc["reader"] = att.reader.tolist()
            doc["embedding_mixing"] = att.embedding.tolist()
            doc["prediction"] = {name: v.tolist() for name, v in self.per_token.items() if name != "grad_x_input"}
        return doc

    def table(self) -> str:
        """For a classifier, the prediction and one line per input token with each method's part in it; for an
        encoder without a head, one line saying where the maps are."""
        att = self.attribution
        if self.per_token is None or att.prediction is None:
            return ("attribution: norm, value zeroing and ALTI per layer and rolled out are in analysis.json and their "
                    "figures; an encoder without a head has no prediction to attribute")
        label, probability = att.prediction
        lines = [f"prediction: {label} {probability:.4f} (calibrated, as attnlab predict says)",
                 f"each input token's part in p({att.label}): norm, v-zero and ALTI its share of what the pooling "
                 f"reads (rolled out, through the embeddings);",
                 "ALTI-logit signed, in logit units; grad x in signed, at the token's position"]
        columns = [c for c in _COLUMNS if c in self.per_token]
        width = max([5, *(_width(t) for t in self.tokens)])
        lines.append(_pad("token", width) + "".join(f"{_COLUMNS[c][0]:>12}" for c in columns))
        for i, token in enumerate(self.tokens):
            lines.append(_pad(token, width) + "".join(_cell(self.per_token[c][i]) for c in columns))
        return "\n".join(lines)


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal: two for a wide (CJK) character."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _cell(v: float) -> str:
    return f"{'-':>12}" if not math.isfinite(float(v)) else f"{float(v):>12.4f}"


def summarize_attribution(att: TextAttribution, tokens: list[str]) -> AttributionSummary:
    """``att`` (:func:`attribute_text`) rolled out over the layers and, for a classifier, read through its pooling
    (``reader``) and its embedding layer (``embedding``) into each input token's part in the prediction; ``tokens``
    the text's tokens as its trace names them (one per row of every matrix)."""
    from ..rollout import rollout

    n = att.norm.shape[-1]
    if len(tokens) != n:
        from ...errors import ShapeError

        raise ShapeError(f"the attribution covers {n} tokens but {len(tokens)} token names were given; pass the "
                         f"tokens of the same text's trace")
    maps = {  # (n, n) each: share of output i drawn from input j
        "norm": rollout(att.norm[:, None])[-1],  # the norms' rows as attention, 0.5 residual
        "value_zeroing": rollout(att.value_zeroing[:, None], residual=0.0)[-1],  # the residual is inside
        "alti": rollout(att.alti[:, None], residual=0.0)[-1],  # the residual is inside
    }
    per_token = None
    if att.reader is not None and att.embedding is not None:
        # what the pooling reads of the last layer's rows, through each rolled-out map, carried from positions to
        # tokens by the embedding layer's mixing (zh-sentiment's bigrams)
        per_token = {name: att.reader @ matrix @ att.embedding for name, matrix in maps.items()}
        if att.alti_logit is not None:  # signed, in logit units: carried from positions to tokens the same way
            per_token["alti_logit"] = att.alti_logit @ att.embedding
        if att.grad_x_input is not None:
            per_token["grad_x_input"] = att.grad_x_input
    return AttributionSummary(list(tokens), att, maps, per_token)
