"""The models' configs, importing no torch: the frozen dataclasses that decide a model's shape
(:class:`ClassifierConfig`, :class:`LMConfig`, :class:`Seq2SeqConfig`, :class:`TransformerSeq2SeqConfig`).  They live
apart from their models so that ``attnlab train ... --help`` reads their defaults without loading torch; the checks
that need the layers (the kernel, its options, the heads' width) import them when a config is built.  Each is
re-exported where it has always been (``attnlab.models``, ``attnlab.models.classifier``, ``attnlab.models.lm``,
``attnlab.models.seq2seq``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .. import _checks as check
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..layers import TransformerConfig

__all__ = ["ATTENTIONS", "POOLINGS", "POSITIONALS", "POSITIONS", "SCORES", "ClassifierConfig", "LMConfig",
           "Seq2SeqConfig", "TransformerSeq2SeqConfig"]

POSITIONALS = ("sinusoidal", "learned", "rotary", "none")
POOLINGS = ("cls", "mean", "attention", "meanmax")
ATTENTIONS = ("bahdanau", "luong")
POSITIONS = ("sinusoidal", "rotary")
SCORES = ("concat", "dot", "general", "location")


@dataclass(frozen=True)
class ClassifierConfig:
    """Everything that decides an :class:`AttentionClassifier`'s shape (its constructor takes exactly this)."""

    vocab_size: int  # rows of the token embedding (the tokenizer's vocabulary size)
    n_classes: int = 2  # outputs of the linear head
    d_model: int = 64  # width of the embeddings and of the residual stream
    n_heads: int = 4  # attention heads per encoder layer
    n_layers: int = 2  # encoder layers; 0 = the tutorials' model (embeddings straight into the pooling)
    d_ff: int | None = None  # hidden width of each feed-forward network; None = 4 * d_model
    dropout: float = 0.1  # on embeddings, attention weights, residual branches and before the head
    max_length: int = 256  # the most tokens per text (the learned position table has this many rows)
    positional: str = "sinusoidal"  # "sinusoidal" (Vaswani et al.), "learned" (a table), "rotary" or "none"
    pooling: str = "cls"  # "cls": the first token's state; "mean": mean of real tokens; "attention": additive;
    # "meanmax": the mean and the max of the real tokens' states side by side (the head reads 2 * d_model)
    kernel: str = "dense"  # attention kernel of the encoder layers (attnlab.functional.KERNELS)
    norm_first: bool = True  # pre-norm encoder layers (stabler for small data); False = the paper's post-norm
    pad_id: int = 0  # the padding token's id: masked everywhere
    kernel_options: Mapping[str, Any] = field(default_factory=dict, hash=False)  # the kernel's own options
    bigrams: int = 0  # embed the pair of tokens starting at each position (this many kept pairs); 0 = off
    trigrams: int = 0  # embed the triple of tokens starting at each position (this many kept triples); 0 = off
    embed_norm: bool = False  # BERT-style embeddings: N(0, 0.02), not scaled by sqrt(d_model), summed (token +
    # bigram + position), then a LayerNorm
    embed_dropout: float | None = None  # dropout on the embeddings; None = dropout
    head_dropout: float | None = None  # dropout before the head; None = dropout

    def __post_init__(self) -> None:
        check.positive_int("vocab_size", self.vocab_size)
        check.integer("n_classes", self.n_classes, low=2, fix="a classifier needs at least two classes")
        check.non_negative_int("n_layers", self.n_layers)
        check.positive_int("max_length", self.max_length)
        check.one_of("positional", self.positional, POSITIONALS)
        check.one_of("pooling", self.pooling, POOLINGS)
        check.boolean("norm_first", self.norm_first, "True = pre-norm, False = post-norm")
        check.non_negative_int("pad_id", self.pad_id)
        check.non_negative_int("bigrams", self.bigrams)
        check.non_negative_int("trigrams", self.trigrams)
        check.boolean("embed_norm", self.embed_norm, "True = LayerNorm the summed embeddings")
        for name in ("embed_dropout", "head_dropout"):
            if getattr(self, name) is not None:
                check.probability(name, getattr(self, name))
        if self.pad_id >= self.vocab_size:
            raise ConfigError(f"pad_id={self.pad_id} is not below vocab_size={self.vocab_size}; "
                              f"pass the tokenizer's padding id")
        if self.n_layers == 0 and self.positional == "rotary":
            raise ConfigError("positional='rotary' rotates queries and keys inside the encoder layers, but "
                              "n_layers=0 has none (the model would see no positions); use 'sinusoidal' or "
                              "'learned' with n_layers=0, or n_layers >= 1")
        if self.n_layers == 0 and self.pooling == "cls":
            raise ConfigError("pooling='cls' with n_layers=0 would classify the [CLS] embedding alone (it sees no "
                              "other token); use pooling='attention' (the tutorials' model) or 'mean'")
        from ..layers import frozen_options

        object.__setattr__(self, "kernel_options", frozen_options("kernel_options", self.kernel_options))
        self.encoder()  # d_model, n_heads, d_ff, dropout, kernel and its options are checked there

    def encoder(self) -> TransformerConfig:
        """The config of each encoder layer."""
        from ..layers import TransformerConfig

        d_ff = self.d_ff if self.d_ff is not None else 4 * self.d_model
        return TransformerConfig(self.d_model, self.n_heads, d_ff, dropout=self.dropout, norm_first=self.norm_first,
                                 kernel=self.kernel, kernel_options=self.kernel_options,
                                 rotary=self.positional == "rotary")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``ClassifierConfig(**d)`` rebuilds it)."""
        d = asdict(self)
        d["kernel_options"] = dict(self.kernel_options)
        return d


@dataclass(frozen=True)
class LMConfig:
    """The shape of a :class:`CausalLM`."""

    vocab_size: int  # tokens the model reads and predicts (the tokenizer's, [UNK] included)
    context: int = 128  # the longest context it is trained on (generation slides a window of this size)
    d_model: int = 128  # width of the residual stream
    n_heads: int = 4  # attention heads per layer
    n_layers: int = 4  # decoder blocks
    d_ff: int = 0  # feed-forward hidden width; 0 = 4 * d_model
    dropout: float = 0.0  # on attention weights and residual branches, in training only
    kernel: str = "dense"  # any causal attention kernel of attnlab.functional.KERNELS
    kernel_options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    mlp: bool = True  # False: the blocks have no feed-forward sublayer (an attention-only model)
    norm: bool = True  # False: no LayerNorm anywhere, the final one included

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context", "d_model", "n_heads", "n_layers"):
            check.positive_int(name, getattr(self, name))
        check.non_negative_int("d_ff", self.d_ff)
        check.probability("dropout", self.dropout)
        check.boolean("mlp", self.mlp, "whether the blocks have a feed-forward sublayer")
        check.boolean("norm", self.norm, "whether the model has LayerNorms")
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}; e.g. "
                              f"d_model={self.n_heads * max(1, round(self.d_model / self.n_heads))}")
        self.layer()  # the kernel, its options and rotary's even d_k are checked there

    def layer(self) -> TransformerConfig:
        """The config of every decoder block: pre-norm, rotary positions."""
        from ..layers import TransformerConfig

        return TransformerConfig(self.d_model, self.n_heads, self.d_ff or 4 * self.d_model, dropout=self.dropout,
                                 norm_first=True, kernel=self.kernel, kernel_options=dict(self.kernel_options),
                                 rotary=True)

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON values; ``mlp`` and ``norm`` only when off, so a model with both (every model saved
        before they existed) writes the same bytes as before."""
        d = asdict(self)
        d["kernel_options"] = dict(self.kernel_options)
        for name in ("mlp", "norm"):
            if d[name]:
                del d[name]
        return d


# --- the translators ---------------------------------------------------------------------------------


def _check_ids(config: Any, src_vocab: int, tgt_vocab: int) -> None:
    """The vocabularies and special ids shared by both configs."""
    check.positive_int("src_vocab", src_vocab)
    check.positive_int("tgt_vocab", tgt_vocab)
    for name in ("pad_id", "bos_id", "eos_id"):
        value = check.non_negative_int(name, getattr(config, name))
        if value >= tgt_vocab:
            raise ConfigError(f"{name}={value} is not below tgt_vocab={tgt_vocab}; pass the tokenizer's special ids "
                              f"(attnlab's pair tokenizers use pad 0, bos 2, eos 3)")
    if config.pad_id >= src_vocab:
        raise ConfigError(f"pad_id={config.pad_id} is not below src_vocab={src_vocab}; pass the tokenizer's padding id")
    if len({config.pad_id, config.bos_id, config.eos_id}) != 3:
        raise ConfigError(f"pad_id, bos_id and eos_id must be three different ids, got {config.pad_id}, "
                          f"{config.bos_id}, {config.eos_id}")
    check.positive_int("max_length", config.max_length, fix="the most source or target tokens, e.g. 64")
    check.probability("dropout", config.dropout)


@dataclass(frozen=True)
class Seq2SeqConfig:
    """Everything that decides a :class:`Seq2Seq` (its constructor takes exactly this)."""

    src_vocab: int  # rows of the source embedding
    tgt_vocab: int  # rows of the target embedding and outputs of the projection
    d_embed: int = 64  # token embedding size E, both sides
    d_hidden: int = 128  # decoder state size H; the encoder runs H / 2 per direction (so H must be even)
    attention: str = "bahdanau"  # "bahdanau" (previous state, additive) or "luong" (current state, `score`)
    score: str = "concat"  # luong: "concat", "dot", "general" or "location"; bahdanau: "concat" (= additive)
    input_feeding: bool = True  # luong: feed h~_{t-1} to the next step; bahdanau feeds c_t anyway (no effect)
    dropout: float = 0.1  # on the embeddings and before the output projection
    max_length: int = 64  # the most source tokens (the location score's positions) and generated tokens
    pad_id: int = 0  # padding, on both sides: masked in the source, never generated
    bos_id: int = 2  # the first decoder input
    eos_id: int = 3  # ends a generated sequence

    def __post_init__(self) -> None:
        _check_ids(self, self.src_vocab, self.tgt_vocab)
        check.positive_int("d_embed", self.d_embed)
        check.positive_int("d_hidden", self.d_hidden)
        if self.d_hidden % 2:
            raise ConfigError(f"d_hidden must be even (the bidirectional encoder runs d_hidden / 2 units per "
                              f"direction), got {self.d_hidden}; pass e.g. d_hidden={self.d_hidden + 1}")
        check.one_of("attention", self.attention, ATTENTIONS)
        check.one_of("score", self.score, SCORES)
        if self.attention == "bahdanau" and self.score != "concat":
            raise ConfigError(f"attention='bahdanau' always uses the additive score (score='concat'), got "
                              f"score={self.score!r}; use attention='luong' for score={self.score!r}")
        check.boolean("input_feeding", self.input_feeding, "feed Luong's attentional vector to the next step")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``Seq2SeqConfig(**d)`` rebuilds it)."""
        return asdict(self)


@dataclass(frozen=True)
class TransformerSeq2SeqConfig:
    """Everything that decides a :class:`TransformerSeq2Seq` (its constructor takes exactly this).

    ``kernel`` is the encoder's attention kernel: the source is read in one pass, where a kernel's savings are.
    The decoder's attention is always ``dense``: it runs one token at a time against its key/value cache (where
    no kernel saves anything), its self-attention is causal and its cross-attention weights are the alignment,
    which the kernels that never build weights (``memory_efficient``, ``linear``, ...) could not give, and which
    ``efficient`` (no causal form) and ``lsh`` (self-attention only) could not compute.  The kernels without
    weights take no attention dropout: use ``dropout=0.0`` with them.
    """

    src_vocab: int  # rows of the source embedding
    tgt_vocab: int  # rows of the target embedding and outputs of the projection
    d_model: int = 128  # width of the residual stream M
    n_heads: int = 4  # attention heads per self- and cross-attention
    n_encoder_layers: int = 2  # encoder layers
    n_decoder_layers: int = 2  # decoder layers
    d_ff: int | None = None  # hidden width of the feed-forward networks; None = 4 * d_model
    dropout: float = 0.1  # on embeddings, attention weights and residual branches
    kernel: str = "dense"  # the encoder layers' attention kernel (attnlab.functional.KERNELS); the decoder: dense
    max_length: int = 64  # the most source or target tokens (rows of the position table)
    pad_id: int = 0  # padding, on both sides: masked in the source, never generated
    bos_id: int = 2  # the first decoder input
    eos_id: int = 3  # ends a generated sequence
    # "sinusoidal": the paper's table added to the embeddings; "rotary": RoPE in every encoder and decoder
    # self-attention and no table (cross-attention has no positions then: it matches content only)
    positions: str = "sinusoidal"

    def __post_init__(self) -> None:
        _check_ids(self, self.src_vocab, self.tgt_vocab)
        check.positive_int("n_encoder_layers", self.n_encoder_layers)
        check.positive_int("n_decoder_layers", self.n_decoder_layers)
        check.one_of("positions", self.positions, POSITIONS)
        self.encoder_layers()  # d_model, n_heads, d_ff, dropout and kernel are checked there (rotary: even d_k)
        _check_kernel_dropout(self.kernel, self.dropout)

    def encoder_layers(self, kernel: str | None = None) -> TransformerConfig:
        """The config of every encoder layer (pre-norm); of every decoder layer with ``kernel="dense"``."""
        from ..layers import TransformerConfig

        d_ff = self.d_ff if self.d_ff is not None else 4 * self.d_model
        return TransformerConfig(self.d_model, self.n_heads, d_ff, dropout=self.dropout, norm_first=True,
                                 kernel=self.kernel if kernel is None else kernel,
                                 rotary=self.positions == "rotary")

    def decoder_layers(self) -> TransformerConfig:
        """The config of every decoder layer: dense attention (see the class docstring)."""
        return self.encoder_layers("dense")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``TransformerSeq2SeqConfig(**d)`` rebuilds it)."""
        return asdict(self)


def _check_kernel_dropout(kernel: str, dropout: float) -> None:
    """A kernel that never builds the weights (its registration says so) has none to drop out: say so at config time."""
    from ..functional import get_kernel

    if dropout == 0.0 or get_kernel(kernel).dropout:
        return
    raise ConfigError(f"TransformerSeq2SeqConfig(kernel={kernel!r}, dropout={dropout}): kernel {kernel!r} has no "
                      f"attention weights to drop out; pass dropout=0.0 or use kernel='dense' / 'memory_efficient'")
