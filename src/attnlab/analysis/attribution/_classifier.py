"""What an attnlab classifier adds around its encoder: its embedding layer's token mixing (n-gram embeddings) and
what its pooling reads of the last layer's rows.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ...errors import InputError
from ._alti import alti_contributions
from ._layers import linear_norm, row_sigma

__all__ = ["as_classifier", "embedding_contributions", "embedding_vectors", "max_rows", "pooled_attention",
           "pooling_reader"]


def embedding_vectors(model: nn.Module, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """An attnlab classifier's embedding layer split into one vector per input token, as ALTI splits a layer
    (float64, one text ``ids`` ``(1, n)``): ``(vectors (n_p, n_j, M), bias (n_p, M), output (n_p, M))`` with
    ``vectors.sum(1) + bias == output``, the embeddings the first layer reads.

    Position ``p`` sums the token's embedding (times the model's scale), the n-gram embeddings that start at ``p``
    (a bigram is the pair ``(p, p+1)``, a trigram the triple) and the position's own; blanking any token of an
    n-gram changes the whole n-gram vector, so it is shared equally among its tokens (their Shapley values; an
    n-gram cut short by the end of the text stays with ``p``).  The position vector is the bias.  With
    ``embed_norm`` the LayerNorm is linearised at each row's real standard deviation, as ALTI does."""
    clf = as_classifier(model, "embedding_vectors reads its embeddings",
                      "a model whose embeddings are one token each needs no such step")
    n = ids.shape[1]
    with torch.no_grad():
        token = clf.embed(ids)[0].double() * clf.scale  # (n, M)
        m = token.shape[1]
        vectors = torch.zeros(n, n, m, dtype=torch.float64)
        vectors[torch.arange(n), torch.arange(n)] = token
        for order, table, rows in ((2, clf.bigram, clf.bigram_ids), (3, clf.trigram, clf.trigram_ids)):
            if table is None:
                continue
            gram = table(rows(ids))[0].double() * clf.scale  # (n, M): the n-gram starting at each position
            for p in range(n):
                owners = list(range(p, min(p + order, n)))
                for j in owners:
                    vectors[p, j] += gram[p] / len(owners)
        bias = clf.position(torch.zeros(1, n, m, dtype=torch.float64))[0]  # (n, M): the position vectors
        z = vectors.sum(1) + bias  # (n, M): what the embedding LayerNorm (if any) receives
        norm = clf.embed_norm
        if norm is None:
            return vectors, bias, z
        sigma = row_sigma(z, norm)  # (n,)
        return (linear_norm(vectors, sigma, norm), linear_norm(bias, sigma, norm, beta=True),
                linear_norm(z, sigma, norm, beta=True))


def embedding_contributions(model: nn.Module, ids: Tensor) -> np.ndarray:
    """``(n_p, n_j)``: ALTI's contributions of each input token to each embedding position
    (:func:`embedding_vectors`, :func:`alti_contributions`); exactly the identity for a model without n-gram
    embeddings (each position carries its own token only: nothing to measure).  A token-level attribution is
    ``row @ rollout(...)[-1] @ embedding_contributions(model, ids)``.  A row where no token's vector comes closer
    to the embedding than nothing (the position vector outweighing them) stays zeros, as in ALTI; none of
    zh-sentiment's 7,952 test positions of the benchmark does."""
    clf = as_classifier(model, "embedding_contributions reads its embeddings",
                      "a model whose embeddings are one token each needs no such step")
    if clf.bigram is None and clf.trigram is None:
        return np.eye(ids.shape[1])
    vectors, _, output = embedding_vectors(model, ids)
    return alti_contributions(vectors, output)


def pooling_reader(model: nn.Module, ids: Tensor) -> np.ndarray:
    """``(n,)``: how much of what an attnlab classifier's head reads comes from each row (output position) of
    its encoder's last layer, for one text ``ids`` ``(1, n)``; non-negative, sums to one.  The attribution of the
    *prediction* is this row vector times a token-to-token matrix (``reader @ rollout(...)[-1]``).

    * ``cls``: position 0 only;
    * ``mean``: ``1 / n`` each (real tokens);
    * ``attention``: the pooling query's attention weights over the rows;
    * ``meanmax``: the head reads ``2M`` numbers, ``M`` means (each ``1 / n`` of every row) and ``M`` maxima (each
      one row's): row ``i`` supplies ``(M / n + wins_i) / 2M``, ``wins_i`` the dimensions where it is the max."""
    clf = as_classifier(model, "pooling_reader reads its pooling",
                      "for another model give the reader yourself (e.g. a uniform row for mean pooling)")
    with torch.no_grad():
        states, real = clf.encode(ids)  # (1, n, M), (1, n)
        x, real = states[0].double(), real[0]  # (n, M), (n,)
        n, m = x.shape
        mean = real.double() / real.sum().clamp_min(1)  # (n,)
        pooling = clf.config.pooling
        if pooling == "cls":
            reader = torch.zeros(n, dtype=torch.float64)
            reader[0] = 1.0
        elif pooling == "mean":
            reader = mean
        elif pooling == "meanmax":
            wins = max_rows(x, real)  # (M,)
            reader = (m * mean + torch.bincount(wins, minlength=n).double()) / (2 * m)
        else:  # attention
            query = clf.pool_query.to(states.dtype)[None]  # (1, M)
            reader = clf.pool(query, states, key_padding_mask=real[None])[1][0].double()  # (n,)
    return reader.numpy()


def as_classifier(model: nn.Module, what: str, fix: str) -> Any:
    """``model`` when it is an attnlab :class:`~attnlab.models.AttentionClassifier`; else an InputError saying
    ``what`` the caller reads of one and the ``fix``."""
    from ...models import AttentionClassifier

    if not isinstance(model, AttentionClassifier):
        raise InputError(f"{what}: it needs an attnlab AttentionClassifier, got {type(model).__name__}; {fix}")
    return model


def max_rows(x: Tensor, real: Tensor) -> Tensor:
    """``(M,)``: the row of ``x`` ``(n, M)`` each dimension's maximum over the real rows (``real`` ``(n,)``) comes
    from, as max pooling reads it."""
    return x.masked_fill(~real[:, None], float("-inf")).argmax(0)


def pooled_attention(trace: Any, pooling: str) -> list[tuple[str, float]]:
    """``(token, share of attention)`` per key token of what the classifier's pooling reads: the pooling query's
    attention (``pooling="attention"``), or the last encoder layer's, mean over heads, from [CLS] (``"cls"``) or
    from every token (``"mean"``, ``"meanmax"``: the mean pools every token's state).  Empty without attention."""
    cross = trace.select(kind="cross") if "cross" in trace.kinds else []
    own = cross if pooling == "attention" and cross else trace.select(kind="self") if "self" in trace.kinds else []
    if not own:
        return []
    rec = own[-1]
    weights = rec.weights[0].float().mean(0)  # (Lq, Lk), mean over heads
    shares = weights[0] if pooling == "cls" else weights.mean(0)  # (Lk,)
    return [(tok, float(w)) for tok, w in zip(rec.key_tokens, shares, strict=True)]
