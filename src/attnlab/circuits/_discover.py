"""Circuit discovery on the edge graph (:mod:`attnlab.circuits._graph`): exact edge patching, EAP, EAP-IG and ACDC,
and the faithfulness of the circuits they find, over a dataset of prompt pairs with bootstrap intervals.

Every method scores an edge by what the metric does when that edge carries the *alternative* activation (the
ablation): ``corrupt`` (the paired corrupted prompt's sender output), ``mean`` (the sender's mean over the clean
prompts, position by position) or ``resample`` (another clean prompt's, by a seeded derangement).  A score is the
change of the task metric, ``m(edge ablated) - m(clean)``, per prompt; the mean over prompts is the edge's score.

* :func:`exact_edge_patching`: the ground truth, one masked forward per edge (batched: ``chunk`` edges at once).
* :func:`eap` (Syed et al., 2023): one clean forward, one alternative forward, one backward;
  ``score(s -> r) = (s_alt - s_clean) . d m / d input_r`` summed over positions, the first-order term of exact
  patching.
* :func:`eap_ig` (Hanna et al., 2024): the gradient averaged over ``steps`` points of the straight path of the
  input embeddings from the alternative's to the clean ones (``k / steps``, k = 1..steps, the clean end included).
* :func:`acdc` (Conmy et al., 2023): from the full graph, edges tried in reverse topological order (the
  output's first, each receiver's senders latest first); an edge whose ablation moves the objective (KL of the
  full model's next-token distribution to the circuit's, or the task metric's distance) by less than ``tau`` stays
  ablated.
* :func:`faithfulness_curve`: keep the top-n edges, ablate the rest; ``(m(circuit) - m(empty)) / (m(full) -
  m(empty))`` for each n, with a bootstrap 95% interval over prompts, and its areas (CPR: the area under the curve
  over the kept fraction; CMD: the area of ``|1 - f|``; MIB, 2025).
"""

from __future__ import annotations

import hashlib
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ._graph import Graph, graph_of, masked_forward, sender_outputs
from ._tasks import PromptPairs, Task, rows_of

__all__ = ["ABLATIONS", "ACDCResult", "Discovery", "EdgeScores", "Faithfulness", "acdc", "acdc_roc", "alternative",
           "compare_scores", "discover", "eap", "eap_ig", "edge_auc", "exact_edge_patching", "faithfulness_curve",
           "manifest", "model_digest"]


def _area(y: object, x: object) -> float:
    """The trapezoid rule's area under ``y`` over ``x`` (numpy 2's ``trapezoid``, numpy 1's ``trapz``: the floor)."""
    ys, xs = np.asarray(y, dtype=np.float64), np.asarray(x, dtype=np.float64)
    return float(((ys[1:] + ys[:-1]) * np.diff(xs)).sum() / 2) if len(ys) > 1 else 0.0

ABLATIONS = ("corrupt", "mean", "resample")


def _cpu() -> float:
    return time.process_time()


def alternative(g: Graph, model: nn.Module, pairs: PromptPairs, ablation: str, seed: int = 0) -> tuple[Tensor,
                                                                                                    Tensor]:
    """``(clean, alternative)`` sender outputs ``(B, T, S, M)`` for ``ablation``."""
    if ablation not in ABLATIONS:
        raise InputError(f"unknown ablation {ablation!r}; choose one of {', '.join(ABLATIONS)}")
    clean = sender_outputs(g, model, pairs.clean)
    if ablation == "corrupt":
        return clean, sender_outputs(g, model, pairs.corrupt)
    if ablation == "mean":
        return clean, clean.mean(0, keepdim=True).expand_as(clean).contiguous()
    b = clean.shape[0]
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(b, generator=gen)
    perm = torch.roll(perm, 1)[torch.argsort(perm)]  # a derangement: prompt i reads another prompt's outputs
    return clean, clean[perm]


def _metric_rows(task: Task, logits: Tensor, pairs: PromptPairs, k: int) -> Tensor:
    """``(K, B)`` the task metric of each copy."""
    b = len(pairs)
    return torch.stack([task.metric(logits[i * b:(i + 1) * b], pairs) for i in range(k)])


def _bootstrap_mean(values: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """``(E, 2)`` the 95% interval of the mean over prompts (axis 0 of ``values`` ``(B, E)``)."""
    rng = np.random.default_rng(seed)
    b = values.shape[0]
    idx = rng.integers(0, b, (n_boot, b))
    means = values[idx].mean(1)  # (n_boot, E)
    return np.stack([np.percentile(means, 2.5, 0), np.percentile(means, 97.5, 0)], 1)


@dataclass
class EdgeScores:
    """Per-edge scores of one method: ``per_prompt`` ``(B, E)`` (the metric's change when the edge is ablated),
    their ``mean`` ``(E,)`` and bootstrap 95% ``interval`` ``(E, 2)``."""

    method: str
    ablation: str
    names: list[str]
    per_prompt: np.ndarray
    cpu_s: float
    steps: int | None = None
    interval: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))

    @property
    def mean(self) -> np.ndarray:
        return self.per_prompt.mean(0)

    def ranking(self) -> np.ndarray:
        """Edge indices by ``|mean|``, largest first."""
        return np.argsort(-np.abs(self.mean), kind="stable")

    def top(self, n: int) -> list[tuple[str, float]]:
        return [(self.names[i], float(self.mean[i])) for i in self.ranking()[:n]]


def _finish(scores: EdgeScores, n_boot: int, seed: int) -> EdgeScores:
    scores.interval = _bootstrap_mean(scores.per_prompt, n_boot, seed)
    return scores


def exact_edge_patching(model: nn.Module, pairs: PromptPairs, task: Task, *, ablation: str = "corrupt",
                        graph: Graph | None = None, edges: Sequence[int] | None = None, chunk: int = 16,
                        seed: int = 0, n_boot: int = 1000) -> EdgeScores:
    """For every edge (or the indices in ``edges``, a sampled set on a larger model): the metric when only that edge
    carries the alternative, less the clean metric, per prompt (edges not in ``edges`` score NaN)."""
    t0 = _cpu()
    g = graph or graph_of(model)
    clean, alt = alternative(g, model, pairs, ablation, seed)
    which = list(range(g.n_edges)) if edges is None else [int(e) for e in edges]
    b = len(pairs)
    with torch.no_grad():
        base = masked_forward(g, model, pairs.clean, check=True).output
        m0 = task.metric(base, pairs)  # (B,)
        out = np.full((b, g.n_edges), np.nan)
        for start in range(0, len(which), chunk):
            part = which[start:start + chunk]
            w = torch.zeros(len(part), g.n_edges, dtype=clean.dtype)
            w[torch.arange(len(part)), torch.tensor(part)] = 1
            logits = masked_forward(g, model, pairs.clean, alt, w).output
            m = _metric_rows(task, logits, pairs, len(part))  # (K, B)
            out[:, part] = (m - m0[None]).T.double().numpy()
    return _finish(EdgeScores("exact", ablation, g.names, out, _cpu() - t0), n_boot, seed)


def _scores_from_probes(g: Graph, probes: dict[tuple[str, int], Tensor], diff: Tensor, copies: int) -> np.ndarray:
    """``(B, E)``: ``diff[b, :, s] . mean_copies(grad_r)[b]`` summed over positions for every edge ``s -> r``."""
    b = diff.shape[0]
    out = torch.zeros(b, g.n_edges, dtype=torch.float64)
    for site, p in probes.items():
        assert p.grad is not None
        grad = p.grad.view(copies, b, *p.grad.shape[1:]).mean(0).double()
        n = g.prefix[site]
        d = diff[:, :, :n].double()
        idx = g.groups[site]
        if grad.dim() == 4:  # (B, T, H, M): a head site
            s = torch.einsum("btsm,bthm->bsh", d, grad)  # (B, Sp, H)
            out[:, idx.reshape(-1)] = s.reshape(b, -1)
        else:
            out[:, idx] = torch.einsum("btsm,btm->bs", d, grad)
    return out.numpy()


def eap(model: nn.Module, pairs: PromptPairs, task: Task, *, ablation: str = "corrupt", graph: Graph | None = None,
        seed: int = 0, n_boot: int = 1000) -> EdgeScores:
    """Edge attribution patching: every edge's first-order estimate from one backward pass (module docstring)."""
    t0 = _cpu()
    g = graph or graph_of(model)
    clean, alt = alternative(g, model, pairs, ablation, seed)
    fwd = masked_forward(g, model, pairs.clean, probes=True, check=True)
    task.metric(fwd.output, pairs).sum().backward()
    out = _scores_from_probes(g, fwd.probes, alt - clean, 1)
    return _finish(EdgeScores("eap", ablation, g.names, out, _cpu() - t0), n_boot, seed)


def eap_ig(model: nn.Module, pairs: PromptPairs, task: Task, *, ablation: str = "corrupt", steps: int = 5,
           graph: Graph | None = None, seed: int = 0, n_boot: int = 1000) -> EdgeScores:
    """EAP with integrated gradients over the input embeddings, ``steps`` points (module docstring)."""
    if steps < 1:
        raise InputError(f"EAP-IG needs at least 1 step, got {steps}")
    t0 = _cpu()
    g = graph or graph_of(model)
    clean, alt = alternative(g, model, pairs, ablation, seed)
    e_clean, e_alt = clean[:, :, 0], alt[:, :, 0]  # (B, T, M)
    alphas = torch.arange(1, steps + 1, dtype=clean.dtype) / steps  # 1/m .. 1: the clean end included
    emb = torch.cat([e_alt + a * (e_clean - e_alt) for a in alphas], 0)  # (m * B, T, M)
    w = torch.zeros(steps, g.n_edges, dtype=clean.dtype)  # m copies, no edge patched
    fwd = masked_forward(g, model, pairs.clean, alt, w, probes=True, embed=emb)
    _metric_rows(task, fwd.output, pairs, steps).sum().backward()
    out = _scores_from_probes(g, fwd.probes, alt - clean, steps)
    return _finish(EdgeScores("eap-ig", ablation, g.names, out, _cpu() - t0, steps=steps), n_boot, seed)


# ---------------------------------------------------------------- faithfulness


@dataclass
class Faithfulness:
    """The faithfulness curve: for each ``n`` (edges kept), ``value`` and its bootstrap 95% interval ``low`` /
    ``high``; ``m_full`` / ``m_empty`` the metric's means; ``cpr`` / ``cmd`` the areas over the kept fraction."""

    ablation: str
    n_edges: int
    ns: np.ndarray
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    m_full: float
    m_empty: float
    m_circuit: np.ndarray
    n_prompts: int
    cpu_s: float

    @property
    def fractions(self) -> np.ndarray:
        return self.ns / self.n_edges

    @property
    def cpr(self) -> float:
        return float(_area(self.value, self.fractions))

    @property
    def cmd(self) -> float:
        return float(_area(np.abs(1 - self.value), self.fractions))

    def smallest(self, level: float = 0.9) -> int | None:
        """The fewest edges kept whose faithfulness reaches ``level`` (None: never)."""
        ok = np.nonzero(self.value >= level)[0]
        return int(self.ns[ok[0]]) if len(ok) else None

    def at(self, n: int) -> tuple[float, float, float]:
        i = int(np.nonzero(self.ns == n)[0][0])
        return float(self.value[i]), float(self.low[i]), float(self.high[i])

    def to_json(self) -> dict[str, Any]:
        n90 = self.smallest(0.9)
        return {"ablation": self.ablation, "n_edges": self.n_edges, "n_prompts": self.n_prompts,
                "m_full": self.m_full, "m_empty": self.m_empty, "cpr": self.cpr, "cmd": self.cmd,
                "smallest_n_at_0.9": n90, "fraction_at_0.9": None if n90 is None else n90 / self.n_edges,
                "curve": [{"n": int(n), "fraction": float(n / self.n_edges), "faithfulness": float(v),
                           "low": float(lo), "high": float(hi), "metric": float(m)}
                          for n, v, lo, hi, m in zip(self.ns, self.value, self.low, self.high, self.m_circuit,
                                                     strict=True)],
                "cpu_s": self.cpu_s}


def _ratio(mc: np.ndarray, mf: np.ndarray, me: np.ndarray) -> np.ndarray:
    """Faithfulness of the means: ``mc`` ``(..., K, B)``, ``mf``/``me`` ``(..., B)``, over the last axis."""
    f, e = mf.mean(-1), me.mean(-1)
    gap = f - e
    with np.errstate(divide="ignore", invalid="ignore"):
        return (mc.mean(-1) - e[..., None]) / gap[..., None]


def _grid(n_edges: int) -> np.ndarray:
    if n_edges <= 200:
        return np.arange(n_edges + 1)
    g = np.unique(np.round(np.geomspace(1, n_edges, 60)).astype(int))
    return np.concatenate([[0], g])


def faithfulness_curve(model: nn.Module, pairs: PromptPairs, task: Task, order: Sequence[int] | np.ndarray, *,
                       ns: Sequence[int] | None = None, ablation: str = "corrupt", graph: Graph | None = None,
                       seed: int = 0, n_boot: int = 1000, chunk: int = 16,
                       circuits: Tensor | None = None) -> Faithfulness:
    """Keep the first ``n`` edges of ``order`` (a ranking, best first) for each ``n`` in ``ns`` (default: every n on
    a small graph, a geometric grid on a large one), ablate the others; or, with ``circuits`` ``(K, E)`` bool, those
    circuits (``ns`` then their sizes)."""
    t0 = _cpu()
    g = graph or graph_of(model)
    clean, alt = alternative(g, model, pairs, ablation, seed)
    order = np.asarray(order, dtype=int)
    if circuits is None:
        grid = _grid(g.n_edges) if ns is None else np.asarray(sorted(set(int(n) for n in ns)))
        if len(grid) and (grid.min() < 0 or grid.max() > g.n_edges):
            raise InputError(f"n must lie in 0..{g.n_edges}")
        keep = torch.zeros(len(grid), g.n_edges, dtype=torch.bool)
        for i, n in enumerate(grid):
            keep[i, torch.as_tensor(order[:n], dtype=torch.long)] = True
    else:
        keep = circuits.bool()
        grid = keep.sum(1).numpy()
    with torch.no_grad():
        full = task.metric(masked_forward(g, model, pairs.clean).output, pairs).double().numpy()
        w_all = torch.ones(1, g.n_edges, dtype=clean.dtype)
        empty = task.metric(masked_forward(g, model, pairs.clean, alt, w_all).output, pairs).double().numpy()
        rows = []
        for start in range(0, len(keep), chunk):
            part = keep[start:start + chunk]
            w = (~part).to(clean.dtype)
            logits = masked_forward(g, model, pairs.clean, alt, w).output
            rows.append(_metric_rows(task, logits, pairs, len(part)).double().numpy())
    mc = np.concatenate(rows, 0)  # (K, B)
    value = _ratio(mc, full, empty)
    rng = np.random.default_rng(seed)
    b = len(pairs)
    idx = rng.integers(0, b, (n_boot, b))
    boot = _ratio(mc[:, idx].transpose(1, 0, 2), full[idx], empty[idx])  # (n_boot, K)
    low, high = np.nanpercentile(boot, 2.5, 0), np.nanpercentile(boot, 97.5, 0)
    return Faithfulness(ablation, g.n_edges, np.asarray(grid), value, low, high, float(full.mean()),
                        float(empty.mean()), mc.mean(1), b, _cpu() - t0)


# ---------------------------------------------------------------- ACDC


@dataclass
class ACDCResult:
    """The edges ACDC kept at ``tau`` (``kept`` ``(E,)`` bool), the objective at the end, the tries made."""

    tau: float
    objective: str
    ablation: str
    kept: np.ndarray
    names: list[str]
    final: float
    tries: int
    cpu_s: float

    @property
    def n_kept(self) -> int:
        return int(self.kept.sum())

    def kept_names(self) -> list[str]:
        return [n for n, k in zip(self.names, self.kept, strict=True) if k]


def _edge_order(g: Graph) -> list[int]:
    """Reverse topological order: receivers latest first (the output, then layer by layer backwards; in a layer
    the MLP before the heads), and each receiver's senders latest first."""
    rank = {r.name: i for i, r in enumerate(g.receivers)}
    sidx = {s.name: i for i, s in enumerate(g.senders)}
    into = {"q": 0, "k": 1, "v": 2, "in": 0}
    keys = [(-rank[e.receiver.name], into[e.into], -sidx[e.sender.name], i) for i, e in enumerate(g.edges)]
    return [k[-1] for k in sorted(keys)]


def acdc(model: nn.Module, pairs: PromptPairs, task: Task, tau: float, *, objective: str = "kl",
         ablation: str = "corrupt", graph: Graph | None = None, seed: int = 0) -> ACDCResult:
    """ACDC at threshold ``tau`` (module docstring); ``objective`` "kl" (mean over prompts and the task's positions
    of KL(full || circuit), nats) or "metric" (``|mean m(circuit) - mean m(full)|``)."""
    if objective not in ("kl", "metric"):
        raise InputError(f"ACDC's objective is 'kl' or 'metric', got {objective!r}")
    t0 = _cpu()
    g = graph or graph_of(model)
    clean, alt = alternative(g, model, pairs, ablation, seed)
    with torch.no_grad():
        full_logits = masked_forward(g, model, pairs.clean, check=True).output
        logp = rows_of(full_logits, pairs).double().log_softmax(-1)
        m_full = float(task.metric(full_logits, pairs).double().mean())

        def value(ablated: Tensor) -> float:
            out = masked_forward(g, model, pairs.clean, alt, ablated[None].to(clean.dtype)).output
            if objective == "kl":
                logq = rows_of(out, pairs).double().log_softmax(-1)
                return float((logp.exp() * (logp - logq)).sum(-1).mean())
            return abs(float(task.metric(out, pairs).double().mean()) - m_full)

        ablated = torch.zeros(g.n_edges, dtype=torch.bool)
        current = 0.0  # the full graph: KL 0, metric distance 0
        tries = 0
        for e in _edge_order(g):
            ablated[e] = True
            new = value(ablated)
            tries += 1
            if new - current < tau:
                current = new
            else:
                ablated[e] = False
    return ACDCResult(tau, objective, ablation, (~ablated).numpy(), g.names, current, tries, _cpu() - t0)


def acdc_roc(results: Sequence[ACDCResult], truth: np.ndarray) -> dict[str, Any]:
    """The (FPR, TPR) of each threshold's circuit against ``truth`` ``(E,)`` bool, and the area under the curve
    through them, (0, 0) and (1, 1) (trapezoids; points sorted by FPR then TPR)."""
    truth = np.asarray(truth, dtype=bool)
    pts = []
    for r in results:
        tp = int((r.kept & truth).sum())
        fp = int((r.kept & ~truth).sum())
        pts.append({"tau": r.tau, "n_kept": r.n_kept, "tpr": tp / max(1, int(truth.sum())),
                    "fpr": fp / max(1, int((~truth).sum()))})
    xy = sorted([(0.0, 0.0), (1.0, 1.0)] + [(p["fpr"], p["tpr"]) for p in pts])
    x, y = np.array([p[0] for p in xy]), np.array([p[1] for p in xy])
    return {"points": pts, "auc": float(_area(y, x))}


def edge_auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """The ROC AUC of ranking edges by ``|scores|`` against ``truth`` (the Mann-Whitney statistic, ties halved)."""
    from scipy.stats import rankdata

    truth = np.asarray(truth, dtype=bool)
    r = rankdata(np.abs(scores))
    n1, n0 = truth.sum(), (~truth).sum()
    if n1 == 0 or n0 == 0:
        return float("nan")
    return float((r[truth].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def compare_scores(estimate: EdgeScores, exact: EdgeScores, ks: Sequence[int] = (10, 20)) -> dict[str, Any]:
    """Spearman correlation of the two methods' mean scores, and the overlap of their top-k edges by ``|score|``."""
    from scipy.stats import spearmanr

    a, b = estimate.mean, exact.mean
    ok = ~np.isnan(b)
    rho = float(spearmanr(a[ok], b[ok]).statistic)
    overlap = {}
    for k in ks:
        ta = set(np.argsort(-np.abs(np.where(ok, a, 0)), kind="stable")[:k])
        tb = set(np.argsort(-np.abs(np.where(ok, b, 0)), kind="stable")[:k])
        overlap[str(k)] = len(ta & tb) / k
    return {"method": estimate.method, "spearman": rho, "top_k_overlap": overlap, "n_edges": int(ok.sum())}


# ---------------------------------------------------------------- the manifest


def model_digest(model: nn.Module) -> str:
    """sha256 of the model's parameters and buffers (names, shapes, values) in name order."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(repr(tuple(t.shape)).encode())
        h.update(t.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def manifest(model: nn.Module, model_name: str, task: Task, pairs: PromptPairs, method: str, ablation: str,
             **extra: Any) -> dict[str, Any]:
    """What a circuit was derived from: the model's hash, the task, method, ablation, metric, the prompts' hash,
    count and seed, and the versions."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("attnlab")
    except PackageNotFoundError:  # a source tree that was never installed
        ours = "unknown"
    return {"model": model_name, "model_sha256": model_digest(model), "task": task.name,
            "task_description": task.description, "metric": task.metric_name, "method": method,
            "ablation": ablation, "prompts": len(pairs), "prompts_sha256": pairs.digest(), "seed": pairs.seed,
            "versions": {"attnlab": ours, "torch": torch.__version__, "numpy": np.__version__,
                         "python": platform.python_version()}, **extra}


# ---------------------------------------------------------------- one run, as the command makes it

METHODS = ("eap", "eap-ig", "acdc")
ACDC_TAUS = (0.001, 0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
LEVEL = 0.9  # the faithfulness a circuit is asked to reach
EXACT_LIMIT = 2000  # exact edge patching of every edge, for comparison, on graphs of at most this many edges


def reference_circuit(model: nn.Module, g: Graph, task: Task) -> tuple[np.ndarray, str] | None:
    """The hand-found answer where there is one: for the induction task on a two-layer attention-only model, the
    circuit issue 32 found (docs/circuits.md): the previous-token heads P (layer 0, detector >= 0.5) read the
    previous token (embed -> P.v) and write into the induction heads' keys (P -> I.k, K-composition); the induction
    heads I (layer 1, >= 0.3) read the current token (embed -> I.q) and the token to copy (embed -> I.v) and write
    to the output (I -> output)."""
    a = g.anatomy
    if task.name != "induction" or a.n_layers != 2 or any(layer.mlp is not None for layer in a.layers):
        return None
    from .induction import find_induction_circuit

    found = find_induction_circuit(model)
    prev = [f"{i}.{h}" for i, h in found.previous_token_heads]
    ind = [f"{i}.{h}" for i, h in found.induction_heads]
    names = [f"embed -> {p}.v" for p in prev] + [f"{p} -> {i}.k" for p in prev for i in ind]
    names += [f"embed -> {i}.{x}" for i in ind for x in ("q", "v")] + [f"{i} -> output" for i in ind]
    text = (f"issue 32's hand-found induction circuit: previous-token heads {', '.join(prev)} -> induction heads "
            f"{', '.join(ind)} keys (K-composition), the embeddings into the previous-token heads' values and the "
            f"induction heads' queries and values, the induction heads into the output ({len(names)} edges)")
    return g.mask(names).numpy(), text


@dataclass
class Discovery:
    """One discovery run (:func:`discover`): the circuit (``kept``), the faithfulness curve and every number."""

    graph: Graph
    method: str
    ablation: str
    scores: EdgeScores | None
    exact: EdgeScores | None
    kept: np.ndarray
    curve: Faithfulness
    circuit: tuple[float, float, float]
    reached: bool
    sweep: list[ACDCResult]
    reference: tuple[np.ndarray, str] | None
    info: dict[str, Any]

    @property
    def widths(self) -> np.ndarray:
        """The scores the figure draws: the method's, or exact patching's for ACDC (zeros without it)."""
        if self.scores is not None:
            return self.scores.mean
        if self.exact is not None:
            return np.nan_to_num(self.exact.mean)
        return np.zeros(self.graph.n_edges)

    def to_json(self) -> dict[str, Any]:
        g = self.graph
        out: dict[str, Any] = dict(self.info)
        out["graph"] = g.summary()
        value, low, high = self.circuit
        out["circuit"] = {"n_edges": int(self.kept.sum()), "fraction": float(self.kept.sum() / g.n_edges),
                          "faithfulness": value, "low": low, "high": high, "reached": self.reached,
                          "level": LEVEL, "edges": [n for n, k in zip(g.names, self.kept, strict=True) if k]}
        out["faithfulness"] = self.curve.to_json()
        edges = []
        for i, name in enumerate(g.names):
            row: dict[str, Any] = {"edge": name, "kept": bool(self.kept[i])}
            for what, s in (("score", self.scores), ("exact", self.exact)):
                if s is not None and not np.isnan(s.mean[i]):
                    row[what] = float(s.mean[i])
                    row[f"{what}_low"], row[f"{what}_high"] = (float(v) for v in s.interval[i])
            edges.append(row)
        out["edges"] = edges
        if self.sweep:
            out["acdc"] = [{"tau": r.tau, "n_kept": r.n_kept, "objective": r.objective, "final": r.final,
                            "tries": r.tries, "cpu_s": r.cpu_s} for r in self.sweep]
        return out


def discover(model: nn.Module, name: str, task: Task, method: str, *, ablation: str = "corrupt", prompts: int = 32,
             seed: int = 0, steps: int = 5, tau: float | None = None, taus: Sequence[float] = ACDC_TAUS,
             objective: str = "kl", n_boot: int = 1000, exact: bool | None = None) -> Discovery:
    """Score every edge with ``method`` ("eap", "eap-ig" or "acdc"), find the circuit and evaluate it.

    EAP / EAP-IG: the circuit is the fewest top-|score| edges whose faithfulness reaches 0.9 (else the top 10%,
    ``reached`` False).  ACDC: with ``tau`` that one threshold is run; else every threshold of ``taus`` (the curve
    is their circuits' faithfulness) and the circuit is ACDC's at the largest threshold whose circuit reaches 0.9
    (the curve also holds the empty and the full graph, so that its areas span every share of edges).  Exact edge
    patching of every edge is run too on graphs of at most :data:`EXACT_LIMIT` edges (``exact``), to compare
    scores with; and where the answer is known (:func:`reference_circuit`) every ranking's ROC AUC."""
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if ablation not in ABLATIONS:
        raise InputError(f"unknown ablation {ablation!r}; choose one of {', '.join(ABLATIONS)}")
    g = graph_of(model)
    pairs = task.prompts(model, prompts, seed)
    do_exact = g.n_edges <= EXACT_LIMIT if exact is None else exact
    ex = exact_edge_patching(model, pairs, task, ablation=ablation, graph=g, seed=seed, n_boot=n_boot) \
        if do_exact else None
    ref = reference_circuit(model, g, task)
    info: dict[str, Any] = {"manifest": manifest(model, name, task, pairs, method, ablation,
                                                 steps=steps if method == "eap-ig" else None,
                                                 objective=objective if method == "acdc" else None,
                                                 n_boot=n_boot)}
    cpu: dict[str, float] = {}
    if ex is not None:
        cpu["exact"] = ex.cpu_s
    scores: EdgeScores | None = None
    sweep: list[ACDCResult] = []
    if method in ("eap", "eap-ig"):
        scores = (eap(model, pairs, task, ablation=ablation, graph=g, seed=seed, n_boot=n_boot) if method == "eap"
                  else eap_ig(model, pairs, task, ablation=ablation, steps=steps, graph=g, seed=seed, n_boot=n_boot))
        cpu[method] = scores.cpu_s
        curve = faithfulness_curve(model, pairs, task, scores.ranking(), ablation=ablation, graph=g, seed=seed,
                                   n_boot=n_boot)
        n90 = curve.smallest(LEVEL)
        reached = n90 is not None
        n = n90 if n90 is not None else max(1, round(0.1 * g.n_edges))
        kept = np.zeros(g.n_edges, dtype=bool)
        kept[scores.ranking()[:n]] = True
    else:
        grid = [tau] if tau is not None else sorted(set(taus))  # a threshold given: that one run alone
        sweep = [acdc(model, pairs, task, t, objective=objective, ablation=ablation, graph=g, seed=seed)
                 for t in grid]
        cpu["acdc"] = float(sum(r.cpu_s for r in sweep))
        info["acdc_cpu_s_per_tau"] = {str(r.tau): r.cpu_s for r in sweep}
        ends = [np.zeros(g.n_edges, dtype=bool), np.ones(g.n_edges, dtype=bool)]  # the curve spans 0 .. all
        circuits = torch.tensor(np.stack([r.kept for r in sweep] + ends))
        sizes = circuits.sum(1).numpy()
        by_size = np.argsort(sizes, kind="stable")
        curve = faithfulness_curve(model, pairs, task, [], ablation=ablation, graph=g, seed=seed, n_boot=n_boot,
                                   circuits=circuits[torch.as_tensor(by_size)])
        f_of = dict(zip(by_size.tolist(), curve.value.tolist(), strict=True))  # sweep index -> faithfulness
        if tau is not None:
            pick = grid.index(tau)
        else:
            good = [i for i in range(len(sweep)) if f_of[i] >= LEVEL]
            pick = max(good, key=lambda i: sweep[i].tau) if good else 0
        kept = sweep[pick].kept.copy()
        reached = f_of[pick] >= LEVEL
        info["acdc_tau"] = sweep[pick].tau
    one = faithfulness_curve(model, pairs, task, [], ablation=ablation, graph=g, seed=seed, n_boot=n_boot,
                             circuits=torch.tensor(kept)[None])
    circuit = (float(one.value[0]), float(one.low[0]), float(one.high[0]))
    if ex is not None and scores is not None:
        info["against_exact"] = compare_scores(scores, ex)
    if ref is not None:
        truth, text = ref
        roc: dict[str, Any] = {"reference": text, "reference_edges": [n for n, t in zip(g.names, truth, strict=True)
                                                                      if t]}
        if scores is not None:
            roc["auc"] = edge_auc(scores.mean, truth)
        if sweep:
            roc.update(acdc_roc(sweep, truth))
        if ex is not None:
            roc["exact_auc"] = edge_auc(np.nan_to_num(ex.mean), truth)
        kept_t = int((kept & truth).sum())
        roc["circuit_recall"] = kept_t / int(truth.sum())
        roc["circuit_precision"] = kept_t / max(1, int(kept.sum()))
        info["roc"] = roc
    info["cpu_s"] = {**cpu, "faithfulness": curve.cpu_s + one.cpu_s}
    return Discovery(g, method, ablation, scores, ex, kept, curve, circuit, reached, sweep, ref, info)
