"""A BERT encoder (Devlin et al., 2019) built from attnlab's own layers, loaded from a Hugging Face BERT folder
(``config.json``, ``model.safetensors``, ``tokenizer.json``) without importing transformers.

Importing transformers and building its ``BertModel`` costs about 4 s of a cold ``attnlab show`` on the bundled
all-MiniLM-L6-v2, more than the rest of the run; this module reads the same weights into the same computation in
about 0.2 s.  Each layer's attention is an :class:`attnlab.layers.MultiHeadAttention` (so capture, statistics,
head gates and the kernels work on it as on any attnlab layer), registered at Hugging Face's module path
``encoder.layer.{i}.attention.self``, so a trace names its layers as one of the transformers model does.
``tests/models/test_bert.py`` checks the weights and hidden states against transformers' eager ``BertModel``.

Only the plain BERT encoder is read: absolute positions, the exact (erf) GELU, no decoder or cross-attention, one
safetensors file and a ``tokenizer.json``.  :func:`unsupported` says why another folder is not, and the caller
(:func:`attnlab.capturing.pretrained.load_encoder`) then loads it with transformers.

Letters: B batch, L tokens, D hidden size, H heads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..errors import InputError, ModelLoadError
from ..layers import MultiHeadAttention

__all__ = ["BertConfig", "BertEncoder", "BertTokenizer", "unsupported"]

WEIGHTS = "model.safetensors"
TOKENIZER = "tokenizer.json"
# Checkpoint keys the encoder does not use: the pooler and the heads of BertFor* models, and a buffer of positions.
_UNUSED = re.compile(r"^(pooler|cls|classifier|qa_outputs)\.|^embeddings\.position_ids$")
# Hugging Face's name of each weight -> attnlab's, inside encoder.layer.{i}.
_RENAMES = (
    (".attention.self.query.", ".attention.self.q_proj."),
    (".attention.self.key.", ".attention.self.k_proj."),
    (".attention.self.value.", ".attention.self.v_proj."),
    (".attention.output.dense.", ".attention.self.out_proj."),
    (".attention.output.LayerNorm.", ".attention.LayerNorm."),
    (".intermediate.dense.", ".intermediate."),
    (".output.dense.", ".output."),
    (".output.LayerNorm.", ".LayerNorm."),
)


@dataclass(frozen=True)
class BertConfig:
    """What a BERT ``config.json`` says about the encoder (the fields of transformers' ``BertConfig`` it needs)."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float
    name_or_path: str = ""
    is_encoder_decoder: bool = False  # read by the callers that also take encoder-decoder models

    @classmethod
    def from_dict(cls, config: dict[str, Any], name: str = "") -> BertConfig:
        fields = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                  "max_position_embeddings", "type_vocab_size", "layer_norm_eps")
        return cls(**{f: config[f] for f in fields}, name_or_path=name)


def unsupported(folder: Path) -> str | None:
    """Why :class:`BertEncoder` cannot load ``folder`` exactly (None: it can): not BERT, or a BERT with a part this
    encoder does not have.  Reads ``config.json`` and the names in the safetensors header, not the weights."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return "no readable config.json"
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        return "not a BERT model"
    checks = {
        "position_embedding_type": (config.get("position_embedding_type", "absolute") == "absolute"),
        "hidden_act": config.get("hidden_act", "gelu") == "gelu",
        "is_decoder": not config.get("is_decoder", False) and not config.get("add_cross_attention", False),
        "fields": all(isinstance(config.get(f), int) for f in (
            "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "max_position_embeddings", "type_vocab_size")),
    }
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        return f"a BERT variant ({', '.join(failed)})"
    if not (folder / WEIGHTS).is_file() or not (folder / TOKENIZER).is_file():
        return f"no {WEIGHTS} or no {TOKENIZER}"
    try:
        names = _checkpoint_names(folder / WEIGHTS)
    except Exception as exc:  # safetensors raises its own error type for a damaged header
        return f"an unreadable {WEIGHTS} ({type(exc).__name__})"
    expected = BertEncoder.weight_names(config["num_hidden_layers"])
    got = {_our_name(n) for n in names if not _UNUSED.search(_strip_prefix(n))}
    return None if got == expected else "weights this encoder does not have or lacks"


class BertEmbeddings(nn.Module):
    """Token + position + segment embeddings, then LayerNorm."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor) -> Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)  # (L,)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)  # (B, L, D)
        return self.LayerNorm(x + self.position_embeddings(positions))


class BertAttention(nn.Module):
    """Post-norm self-attention: ``LayerNorm(x + MultiHead(x))``; the attention sits at ``.self`` as in BERT."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.add_module("self", MultiHeadAttention(cfg.hidden_size, cfg.num_attention_heads))
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, x: Tensor, keep: Tensor | None) -> Tensor:
        out, _ = self.get_submodule("self")(x, key_padding_mask=keep)  # (B, L, D)
        return self.LayerNorm(x + out)


class BertLayer(nn.Module):
    """One encoder layer: attention, then the feed-forward ``LayerNorm(h + W2 gelu(W1 h))``."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(cfg)
        self.intermediate = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.output = nn.Linear(cfg.intermediate_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, x: Tensor, keep: Tensor | None) -> Tensor:
        h = self.attention(x, keep)  # (B, L, D)
        return self.LayerNorm(h + self.output(nn.functional.gelu(self.intermediate(h))))


class BertStack(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(cfg) for _ in range(cfg.num_hidden_layers))


class BertEncoder(nn.Module):
    """The BERT encoder: ``forward(input_ids, token_type_ids=None, attention_mask=None)`` -> the last hidden
    states ``(B, L, D)``.  ``attention_mask`` is ``(B, L)``, 1 for a real token and 0 for padding, as in
    transformers.  Build it with :meth:`from_folder`."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertStack(config)

    @classmethod
    def weight_names(cls, n_layers: int) -> set[str]:
        """The names of the weights an encoder of ``n_layers`` layers has (built tiny: names do not depend on
        sizes; the meta device would import half of torch's compiler for the embeddings' init)."""
        tiny = BertConfig(vocab_size=2, hidden_size=2, num_hidden_layers=n_layers, num_attention_heads=1,
                          intermediate_size=2, max_position_embeddings=2, type_vocab_size=2, layer_norm_eps=1e-12)
        return set(cls(tiny).state_dict())

    @classmethod
    def from_folder(cls, folder: str | Path) -> BertEncoder:
        """The encoder of a Hugging Face BERT folder that :func:`unsupported` accepts, in eval mode."""
        from safetensors.torch import load_file

        folder = Path(folder)
        reason = unsupported(folder)
        if reason is not None:
            raise ModelLoadError(f"{str(folder)!r} cannot be read by attnlab's BERT encoder: {reason}; load it with "
                                 f"transformers instead (attnlab.capturing.load_model)")
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        weights = {_our_name(k): v for k, v in load_file(folder / WEIGHTS).items() if not _UNUSED.search(
            _strip_prefix(k))}
        model = cls(BertConfig.from_dict(config, str(config.get("_name_or_path", folder))))
        model.load_state_dict(weights, strict=True, assign=True)  # the file's tensors, not copies
        return model.eval()

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None) -> Tensor:
        types = torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids  # (B, L)
        # (B, L), True = real token; no mask at all when every token is real (the same weights, one pass less)
        keep = None if attention_mask is None or bool(attention_mask.all()) else attention_mask.bool()
        x = self.embeddings(input_ids, types)  # (B, L, D)
        for layer in self.encoder.layer:
            x = layer(x, keep)
        return x


def _strip_prefix(name: str) -> str:
    """A BertFor* checkpoint keeps the encoder under ``bert.``."""
    return name.removeprefix("bert.")


def _our_name(name: str) -> str:
    name = _strip_prefix(name)
    for theirs, ours in _RENAMES:
        if theirs in name:
            return name.replace(theirs, ours)
    return name


def _checkpoint_names(path: Path) -> list[str]:
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        return list(f.keys())


# The special tokens a tokenizer_config.json or special_tokens_map.json names, in transformers' order.
_SPECIAL = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


class BertTokenizer:
    """A folder's ``tokenizer.json`` through the ``tokenizers`` library, with the part of transformers' tokenizer
    interface that :func:`attnlab.capturing.trace_text`, :func:`attnlab.analysis.corpus_metrics` and
    :func:`attnlab.analysis.attribute_text` use (calling it on a text or a padded batch, ``convert_ids_to_tokens``,
    ``get_vocab``, the special tokens and ``model_max_length``).  The padding and truncation a
    ``tokenizer.json`` may carry are switched off, as transformers does."""

    def __init__(self, folder: str | Path) -> None:
        from tokenizers import Tokenizer

        folder = Path(folder)
        self._tok = Tokenizer.from_file(str(folder / TOKENIZER))
        self._tok.no_padding()
        self._tok.no_truncation()
        self._cut: dict[int, Any] = {}  # max_length -> a truncating copy (_truncating)
        settings: dict[str, Any] = {}
        for name in ("tokenizer_config.json", "special_tokens_map.json"):  # the second wins, as in transformers
            path = folder / name
            if path.is_file():
                loaded = json.loads(path.read_text(encoding="utf-8"))
                settings.update(loaded if isinstance(loaded, dict) else {})
        self.model_max_length: int = int(settings.get("model_max_length") or 1_000_000_000)
        special = [_content(settings.get(s)) for s in _SPECIAL]
        self.all_special_tokens: list[str] = [t for t in dict.fromkeys(special) if isinstance(t, str)]
        self.all_special_ids: list[int] = [self.convert_tokens_to_id(t) for t in self.all_special_tokens]
        self.unk_token: str | None = _content(settings.get("unk_token"))
        self.unk_token_id: int | None = None if self.unk_token is None else self.convert_tokens_to_id(self.unk_token)
        self.pad_token: str | None = _content(settings.get("pad_token"))
        self.pad_token_id: int | None = None if self.pad_token is None else self.convert_tokens_to_id(self.pad_token)
        # the start tokens the causal detectors put first (transformers' names; BERT has a [CLS] and no BOS)
        self.cls_token_id: int | None = self._special_id(settings, "cls_token")
        self.bos_token_id: int | None = self._special_id(settings, "bos_token")
        self.vocab_size: int = int(self._tok.get_vocab_size(with_added_tokens=False))

    def __call__(self, text: str | list[str], text_pair: str | None = None, *, return_tensors: str = "pt",
                 truncation: bool = False, max_length: int | None = None, padding: bool = False,
                 verbose: bool = True, return_offsets_mapping: bool = False) -> dict[str, Tensor]:
        """``input_ids``, ``token_type_ids`` and ``attention_mask``, each ``(1, L)``, special tokens added;
        ``truncation=True`` cuts the longest of the texts until the whole fits ``max_length``.  A list of ``B``
        texts gives ``(B, L)`` tensors; with ``padding=True`` (which a list of texts of different lengths needs)
        each is padded on the right to the batch's longest with the pad token, ``attention_mask`` 0 there, as
        transformers' ``padding=True`` does.  ``return_offsets_mapping=True`` adds ``offset_mapping`` ``(B, L, 2)``,
        each token's character range in its text (``(0, 0)`` for a special token), as transformers' fast tokenizers
        do."""
        if return_tensors != "pt":
            raise ValueError(f"BertTokenizer returns PyTorch tensors (return_tensors='pt'), got {return_tensors!r}")
        tok = self._truncating(max_length or self.model_max_length) if truncation else self._tok
        if isinstance(text, str):
            encs = [tok.encode(text, text_pair)]
        else:
            if text_pair is not None:
                raise InputError("BertTokenizer takes text_pair with one text, not with a list of texts; call it "
                                 "once per pair")
            encs = tok.encode_batch(list(text))
        lengths = {len(e.ids) for e in encs}
        if len(lengths) > 1 and not padding:
            raise InputError(f"the {len(encs)} texts are {min(lengths)} to {max(lengths)} tokens long and a batch "
                             f"needs one length; pass padding=True")
        width = max(lengths)
        pad = self.pad_token_id if self.pad_token_id is not None else 0
        fill = {"input_ids": pad, "token_type_ids": 0, "attention_mask": 0}
        rows: dict[str, list[list[int]]] = {name: [] for name in fill}
        for e in encs:
            for name, ids in (("input_ids", e.ids), ("token_type_ids", e.type_ids),
                              ("attention_mask", e.attention_mask)):
                rows[name].append(list(ids) + [fill[name]] * (width - len(ids)))  # right padding
        out = {name: torch.tensor(r, dtype=torch.long) for name, r in rows.items()}  # (B, L) each
        if return_offsets_mapping:
            out["offset_mapping"] = torch.tensor([[list(o) for o in e.offsets] + [[0, 0]] * (width - len(e.ids))
                                                  for e in encs], dtype=torch.long).reshape(len(encs), width, 2)
        return out

    def _truncating(self, limit: int) -> Any:
        """A copy of the tokenizer that truncates to ``limit`` tokens, made once per limit: the shared one is never
        switched, so calls from several threads (``attnlab serve``'s) cannot see each other's setting."""
        tok = self._cut.get(limit)
        if tok is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_str(self._tok.to_str())
            tok.enable_truncation(limit, strategy="longest_first")
            self._cut[limit] = tok
        return tok

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        tokens = [self._tok.id_to_token(i) for i in ids]
        if None in tokens:
            bad = ids[tokens.index(None)]
            raise InputError(f"token id {bad} is not in the vocabulary ({self._tok.get_vocab_size()} ids); pass ids "
                             f"from 0 to {self._tok.get_vocab_size() - 1}")
        return [t for t in tokens if t is not None]

    def _special_id(self, settings: dict[str, Any], name: str) -> int | None:
        token = _content(settings.get(name))
        return None if token is None else self.convert_tokens_to_id(token)

    def convert_tokens_to_id(self, token: str) -> int:
        found = self._tok.token_to_id(token)
        if found is None:
            raise ModelLoadError(f"the tokenizer names the special token {token!r} but its vocabulary has no such "
                                 f"token; fix tokenizer_config.json or special_tokens_map.json")
        return int(found)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._tok.get_vocab(with_added_tokens=True))


def _content(value: Any) -> str | None:
    """A special token as the configs write it: a string, or an AddedToken's ``{"content": ...}``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None
