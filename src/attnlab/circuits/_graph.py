"""The computational graph of a model, edge by edge, and the one forward pass every discovery method runs.

**Nodes.** ``embed`` (what the residual stream holds before the first block: the token embeddings, and the
positional ones where a model adds them), every attention head ``"L.H"``, every MLP ``"mL"`` where the model has
them, and ``output`` (the logits: the last block's output, read by the final norm and the unembedding).

**Edges.** Every sender's output into every later receiver's input, and for a head into its query, key and value
inputs separately: ``"0.0 -> 1.0.k"``.  Under grouped-query attention a key/value head shared by several query heads
is a receiver of its own, ``"L.kvG"`` (``"0.0 -> 1.kv0.k"``): its keys and values are one input, whichever query
head reads them.  A head of layer ``L`` receives from ``embed``, every head and MLP of the
layers before ``L``; the MLP of layer ``L`` also from the heads of layer ``L``; ``output`` from everything.
induction-2l (2 layers x 4 heads, no MLP): 12 edges into layer 0 (1 sender x 4 heads x q/k/v), 60 into layer 1
(5 senders x 12), 9 into the output: **81 edges**.

**The masked forward** (:func:`masked_forward`): the model run on the clean input in which every edge ``e`` may
carry, by a weight ``w[e]`` in [0, 1], its sender's *alternative* output (from a corrupted prompt, a mean, a
resampled prompt) instead of its current one.  A receiver's input is the current residual stream at its block
less ``sum_e w[e] (sender_now - sender_alternative)`` over its incoming edges, so exactly and only that edge is
changed; the residual stream itself, and every other receiver, are untouched.  A head's q, k or v is then
recomputed from that input through the block's own pre-attention LayerNorm (which sees the patched input: its
scale is recomputed, not frozen) and the projection's own module, and replaces that head's slice of
``attn.hook_q/k/v``; an MLP's input replaces ``hook_resid_mid``; the output's replaces the last
``hook_resid_post``.  Downstream of a patched receiver everything is recomputed, as in ACDC (Conmy et al., 2023).
``w = 0`` is the clean run; ``w = 1`` everywhere makes every receiver read only alternatives.  ``K`` masks run at
once (the batch repeated ``K`` times).  With ``probes`` every receiver's input gets a zero tensor added whose
gradient is ``d metric / d input``: edge attribution patching's one backward pass.

The hook points and the parts are those of :mod:`attnlab.circuits._model` (``anatomy(model).layers[i]``: ``norm``,
``attn.q_proj`` / ``k_proj`` / ``v_proj``, ``mlp``); a model whose parts do not recompute its own q/k/v (checked on
every clean run) is refused, and so is a post-norm one (its stream is not a sum of its parts' outputs).

Letters: K masks, B prompts, T positions, S senders, E edges, H heads, D per-head size, M d_model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import InputError
from ._model import Anatomy, Edit, anatomy, head_results, run_with_hooks

__all__ = ["Edge", "Graph", "Node", "Senders", "graph_of", "masked_forward", "sender_outputs"]

INTOS = ("q", "k", "v")


@dataclass(frozen=True)
class Node:
    """One node: ``kind`` "embed", "head", "mlp", "output" or "kv" (a shared key/value head, a receiver only);
    ``layer`` -1 for embed, N for the output."""

    name: str
    kind: str
    layer: int
    head: int | None = None


@dataclass(frozen=True)
class Edge:
    """``sender``'s output into ``receiver``'s input ``into`` ("q", "k", "v" for a head, "in" for an MLP or the
    output)."""

    sender: Node
    receiver: Node
    into: str

    @property
    def name(self) -> str:
        tail = f".{self.into}" if self.into in INTOS else ""
        return f"{self.sender.name} -> {self.receiver.name}{tail}"


@dataclass
class Graph:
    """The nodes and edges of one model (:func:`graph_of`); ``groups`` maps each receiver site (``("q", L)``,
    ``("mlp", L)``, ``("output", N)``) to its edges' indices, ``(S_prefix, H)`` for heads, ``(S_prefix,)`` else."""

    anatomy: Anatomy
    senders: list[Node]
    receivers: list[Node]
    edges: list[Edge]
    groups: dict[tuple[str, int], Tensor] = field(repr=False)
    prefix: dict[tuple[str, int], int] = field(repr=False)  # how many senders (a prefix of `senders`) a site reads

    @property
    def n_edges(self) -> int:
        return len(self.edges)

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.edges]

    def index(self, name: str) -> int:
        names = self.names
        if name not in names:
            raise InputError(f"the graph has no edge {name!r}; edges look like {names[0]!r} or "
                             f"{names[-1]!r}")
        return names.index(name)

    def mask(self, names: Any) -> Tensor:
        """``(E,)`` bool: True for the edges named (or given as indices)."""
        m = torch.zeros(self.n_edges, dtype=torch.bool)
        for n in names:
            m[self.index(n) if isinstance(n, str) else int(n)] = True
        return m

    def summary(self) -> dict[str, Any]:
        return {"nodes": [s.name for s in self.senders] + ["output"], "n_edges": self.n_edges,
                "n_senders": len(self.senders), "n_receivers": len(self.receivers)}


def graph_of(model: nn.Module) -> Graph:
    """The graph of ``model`` (module docstring); a post-norm model is an :class:`InputError`."""
    a = anatomy(model)
    if not all(layer.pre_norm for layer in a.layers):
        raise InputError("edge-level circuits need a pre-norm model (its residual stream is the sum of its parts' "
                         "outputs); this one normalises after each sublayer")
    h = a.n_heads
    n_kv = int(getattr(a.layers[0].attn, "n_kv_heads", h))  # grouped-query attention: fewer key/value heads
    senders = [Node("embed", "embed", -1)]
    receivers: list[Node] = []
    edges: list[Edge] = []
    groups: dict[tuple[str, int], Tensor] = {}
    prefix: dict[tuple[str, int], int] = {}
    for i, layer in enumerate(a.layers):
        heads = [Node(f"{i}.{j}", "head", i, j) for j in range(h)]
        # a key/value head shared by several query heads is a receiver of its own, "L.kvG"
        shared = [Node(f"{i}.kv{g}", "kv", i, g) for g in range(n_kv)] if n_kv != h else heads
        receivers.extend(heads + (shared if shared is not heads else []))
        n = len(senders)
        for into in INTOS:
            into_heads = heads if into == "q" else shared
            idx = torch.empty(n, len(into_heads), dtype=torch.long)
            for j, r in enumerate(into_heads):
                for s in range(n):
                    idx[s, j] = len(edges)
                    edges.append(Edge(senders[s], r, into))
            groups[(into, i)], prefix[(into, i)] = idx, n
        senders.extend(heads)
        if layer.mlp is not None:
            mlp = Node(f"m{i}", "mlp", i)
            receivers.append(mlp)
            n = len(senders)
            groups[("mlp", i)] = torch.arange(len(edges), len(edges) + n)
            prefix[("mlp", i)] = n
            edges.extend(Edge(senders[s], mlp, "in") for s in range(n))
            senders.append(mlp)
    out = Node("output", "output", a.n_layers)
    receivers.append(out)
    n = len(senders)
    groups[("output", a.n_layers)] = torch.arange(len(edges), len(edges) + n)
    prefix[("output", a.n_layers)] = n
    edges.extend(Edge(senders[s], out, "in") for s in range(n))
    return Graph(a, senders, receivers, edges, groups, prefix)


Senders = Tensor  # (B, T, S, M): every sender's output in one run


def _sender_sites(g: Graph) -> list[str]:
    a = g.anatomy
    names = ["blocks.0.hook_resid_pre"]
    for i, layer in enumerate(a.layers):
        names.append(f"blocks.{i}.attn.hook_z")
        if layer.mlp is not None:
            names.append(f"blocks.{i}.hook_mlp_out")
    return names


def sender_outputs(g: Graph, model: nn.Module, tokens: Tensor, **kwargs: Any) -> Senders:
    """``(B, T, S, M)`` every sender's output on ``tokens`` (a plain run): the embeddings, each head's output
    through its slice of ``W_O`` (``attn.hook_result``), each MLP's output."""
    with torch.no_grad():
        return _sender_columns(g, model, tokens, **kwargs)


def _sender_columns(g: Graph, model: nn.Module, tokens: Tensor, **kwargs: Any) -> Senders:
    a = g.anatomy
    _, kept = run_with_hooks(model, tokens, keep=_sender_sites(g), **kwargs)
    cols = [kept["blocks.0.hook_resid_pre"][:, :, None]]
    for i, layer in enumerate(a.layers):
        cols.append(head_results(a, i, kept[f"blocks.{i}.attn.hook_z"]))
        if layer.mlp is not None:
            cols.append(kept[f"blocks.{i}.hook_mlp_out"][:, :, None])
    return torch.cat(cols, 2)  # (B, T, S, M)


@dataclass
class Forward:
    """What :func:`masked_forward` returns: the output ``(K * B, ...)`` and, with probes, each site's probe."""

    output: Tensor
    probes: dict[tuple[str, int], Tensor]
    senders: list[Tensor | None]


CHECK_TOL = 1e-4


def masked_forward(g: Graph, model: nn.Module, tokens: Tensor, alternative: Senders | None = None,
                   weights: Tensor | None = None, *, probes: bool = False, embed: Tensor | None = None,
                   check: bool = False, **kwargs: Any) -> Forward:
    """The model on ``tokens`` ``(B, T)`` with each edge carrying ``weights[k, e]`` of ``alternative``'s sender
    output in copy ``k`` (``weights`` ``(K, E)``; None: no edge patched, one copy); the output is ``(K * B, ...)``,
    copy-major.  ``embed`` ``(K * B, T, M)`` replaces the embeddings (EAP-IG's interpolation).  With ``probes``
    the run keeps gradients.  ``check`` compares the recomputed q/k/v of an unpatched run with the model's own."""
    a = g.anatomy
    b = tokens.shape[0]
    k = 1 if weights is None else weights.shape[0]
    if weights is not None:
        if alternative is None:
            raise InputError("patched edges need the alternative senders' outputs (sender_outputs of the corrupted "
                             "run, or their mean)")
        if weights.shape != (k, g.n_edges):
            raise InputError(f"weights must be (K, {g.n_edges}), one per edge; got {tuple(weights.shape)}")
    toks = tokens.repeat(k, *([1] * (tokens.dim() - 1)))  # (K*B, T)
    cur: list[Tensor | None] = [None] * len(g.senders)
    state: dict[str, Tensor] = {}
    kept_probes: dict[tuple[str, int], Tensor] = {}
    first_head = {i: 1 + sum(g.anatomy.n_heads + (lay.mlp is not None) for lay in a.layers[:i])
                  for i in range(a.n_layers)}

    def delta(site: tuple[str, int], heads: bool) -> Tensor | None:
        if weights is None:
            return None
        ww = weights[:, g.groups[site]]  # (K, Sp, H) or (K, Sp)
        if not bool((ww != 0).any()):
            return None
        n = g.prefix[site]
        now = torch.stack([c for c in cur[:n] if c is not None], 2)  # (K*B, T, Sp, M)
        assert alternative is not None and now.shape[2] == n
        diff = now.view(k, b, *now.shape[1:]) - alternative[None, :, :, :n].to(now.dtype)  # (K, B, T, Sp, M)
        ww = ww.to(now.dtype)
        d = torch.einsum("kbtsm,ksh->kbthm", diff, ww) if heads else torch.einsum("kbtsm,ks->kbtm", diff, ww)
        return d.reshape(k * b, *d.shape[2:])

    def probe_of(site: tuple[str, int], x: Tensor) -> Tensor:
        if not probes:
            return x
        p = torch.zeros_like(x, requires_grad=True)
        kept_probes[site] = p
        return x + p

    def resid_pre(i: int) -> Edit:
        def edit(x: Tensor) -> Tensor | None:
            out = None
            if i == 0:
                if embed is not None:
                    out = x = embed.to(x.dtype)
                cur[0] = x
            state[f"resid{i}"] = x
            return out
        return edit

    def qkv(i: int, into: str) -> Edit:
        layer = a.layers[i]
        proj = {"q": layer.attn.q_proj, "k": layer.attn.k_proj, "v": layer.attn.v_proj}[into]

        def edit(x: Tensor) -> Tensor | None:  # x (K*B, T, H, D)
            d = delta((into, i), True)
            if d is None and not probes and not check:
                return None
            resid = state[f"resid{i}"]  # (K*B, T, M)
            hh = x.shape[2]
            inp = resid[:, :, None, :].expand(-1, -1, hh, -1)
            if d is not None:
                inp = inp - d
            inp = probe_of((into, i), inp)
            # the norm's own computation without its hooks, and the projection from its weight and bias (this edit
            # runs inside the projection's hook; a Hugging Face model's projections are views of its parameters)
            normed = layer.norm.forward(inp) if layer.norm is not None else inp
            full = F.linear(normed, proj.weight, getattr(proj, "bias", None))  # (K*B, T, H, H*D)
            y = full.view(*full.shape[:3], hh, -1).diagonal(dim1=2, dim2=3).movedim(-1, 2)  # (K*B, T, H, D)
            if check and d is None:
                err = float((y - x).detach().abs().max())
                if err > CHECK_TOL * max(1.0, float(x.detach().abs().max())):
                    raise InputError(f"layer {i}'s {into} recomputed from its input differs from the model's own "
                                     f"by {err:.3g}: its parts (anatomy: norm, {into}_proj) do not make its "
                                     f"attention's input, so its edges cannot be patched")
            return y
        return edit

    def z_of(i: int) -> Edit:
        def edit(z: Tensor) -> None:
            res = head_results(a, i, z)  # (K*B, T, H, M)
            for j in range(res.shape[2]):
                cur[first_head[i] + j] = res[:, :, j]
        return edit

    def mlp_in(i: int) -> Edit:
        def edit(x: Tensor) -> Tensor | None:
            d = delta(("mlp", i), False)
            y = x if d is None else x - d
            y = probe_of(("mlp", i), y)
            return None if y is x else y
        return edit

    def mlp_out(i: int) -> Edit:
        def edit(x: Tensor) -> None:
            cur[first_head[i] + a.n_heads] = x
        return edit

    def output(x: Tensor) -> Tensor | None:
        d = delta(("output", a.n_layers), False)
        y = x if d is None else x - d
        y = probe_of(("output", a.n_layers), y)
        return None if y is x else y

    edits: dict[str, Callable[[Tensor], Tensor | None]] = {}
    for i, layer in enumerate(a.layers):
        p = f"blocks.{i}."
        edits[p + "hook_resid_pre"] = resid_pre(i)
        for into in INTOS:
            edits[p + f"attn.hook_{into}"] = qkv(i, into)
        edits[p + "attn.hook_z"] = z_of(i)
        if layer.mlp is not None:
            edits[p + "hook_resid_mid"] = mlp_in(i)
            edits[p + "hook_mlp_out"] = mlp_out(i)
    last = f"blocks.{a.n_layers - 1}.hook_resid_post"
    edits[last] = output
    out, _ = run_with_hooks(model, toks, edits, grad=probes, **kwargs)
    return Forward(out, kept_probes, cur)


def head_site_edges(g: Graph) -> dict[tuple[str, int], tuple[Tensor, int]]:
    """Each receiver site's edge indices and its prefix of senders (for scoring by probes)."""
    return {site: (idx, g.prefix[site]) for site, idx in g.groups.items()}
