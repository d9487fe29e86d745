"""Attention layers (``nn.Module``): batch first ``(batch, seq, d_model)``.

Every layer asks its kernel for weights only when the caller or :func:`attnlab.capture` wants them,
hands what it computed (one :class:`AttentionCall`: weights, q, k, scale, merged mask, kind, the heads'
outputs) to its ``attn_hook`` (an :class:`AttentionHook`) and stores nothing on ``self``.
"""

from ._config import frozen_options
from ._hook import AttentionCall, AttentionHook
from ._torch_mha import from_torch_masks
from .cache import DecoderLayerCache, KVCache
from .conv_block import ConvAttentionBlock, ConvAttentionConfig
from .decoder import TransformerDecoder, TransformerDecoderLayer
from .encoder import TransformerEncoder, TransformerEncoderLayer
from .feedforward import FeedForward, FeedForwardConfig, TransformerConfig
from .multihead import AttentionConfig, MultiHeadAttention
from .recurrent import BahdanauAttention, LuongAttention, RecurrentAttentionConfig

__all__ = [
    "AttentionCall",
    "AttentionConfig",
    "AttentionHook",
    "BahdanauAttention",
    "ConvAttentionBlock",
    "ConvAttentionConfig",
    "DecoderLayerCache",
    "FeedForward",
    "FeedForwardConfig",
    "KVCache",
    "LuongAttention",
    "MultiHeadAttention",
    "RecurrentAttentionConfig",
    "TransformerConfig",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "from_torch_masks",
    "frozen_options",
]
