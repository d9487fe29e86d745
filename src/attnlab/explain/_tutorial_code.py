"""The tutorials' own code, reproduced faithfully so its bugs can be shown running.

Nothing here is part of attnlab's API or follows its conventions: each definition is the tutorial's
snippet with only its formatting restored (the web page lost the line breaks), names and logic kept.
The ``explain`` topics run these next to attnlab's versions.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# The tutorials' example input (万字深度解析注意力机制全景, "x"): batch 1, 4 tokens, 8 features.
EXAMPLE_X = torch.tensor(
    [
        [
            [1.0, 0.5, 0.8, 2.0, 0.1, 1.5, 0.3, 1.2],
            [0.7, 1.2, 0.4, 1.8, 0.9, 0.6, 1.1, 0.2],
            [1.3, 0.3, 1.7, 0.6, 1.4, 0.8, 0.5, 1.9],
            [0.2, 1.5, 1.1, 0.7, 0.3, 1.8, 1.6, 0.4],
        ]
    ]
)


# ----- «万字深度解析注意力机制全景», sections 2.1, 3.2, 4.2 and 5.3 -------------------------------------
def panorama_scaled_dot_product_attention(Q: Tensor, K: Tensor, V: Tensor) -> tuple[Tensor, Tensor]:
    """The panorama tutorial's ``scaled_dot_product_attention(Q, K, V)``: note that it takes no mask at all."""
    matmul_qk = torch.matmul(Q, K.transpose(-2, -1))
    d_k = K.size(-1)
    scaled_attention_logits = matmul_qk / torch.sqrt(torch.tensor(d_k, dtype=torch.float32))
    attention_weights = torch.softmax(scaled_attention_logits, dim=-1)
    output = torch.matmul(attention_weights, V)
    return output, attention_weights


class PanoramaMultiHeadAttention(nn.Module):
    """The panorama tutorial's ``MultiHeadAttention``: ``forward(Q, K, V, mask=None)`` accepts a mask and drops it."""

    def __init__(self, embed_size: int, num_heads: int) -> None:
        super().__init__()
        self.embed_size = embed_size
        self.num_heads = num_heads
        self.head_dim = embed_size // num_heads
        assert self.head_dim * num_heads == embed_size, "嵌入维度必须是头数的整数倍"
        self.Wq = nn.Linear(embed_size, embed_size)
        self.Wk = nn.Linear(embed_size, embed_size)
        self.Wv = nn.Linear(embed_size, embed_size)
        self.fc_out = nn.Linear(embed_size, embed_size)

    def split_heads(self, x: Tensor) -> Tensor:
        batch_size, seq_length, _ = x.size()
        return x.view(batch_size, seq_length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        batch_size = Q.size(0)
        Q = self.Wq(Q)
        K = self.Wk(K)
        V = self.Wv(V)
        Q = self.split_heads(Q)  # (batch_size, num_heads, seq_len, head_dim)
        K = self.split_heads(K)
        V = self.split_heads(V)
        attn_output, attn_weights = panorama_scaled_dot_product_attention(Q, K, V)  # the mask is never used
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, -1, self.embed_size)
        output = self.fc_out(attn_output)
        return output, attn_weights


def panorama_create_mask(size: int) -> Tensor:
    """The panorama tutorial's decoder mask (section 4.2): 0 on and below the diagonal, -inf above."""
    mask = torch.tril(torch.ones(size, size))
    return mask.masked_fill(mask == 0, float("-inf"))


class PanoramaEfficientAttention(nn.Module):
    """The panorama tutorial's ``EfficientAttention`` (5.3, 高效注意力实现): softmax over the keys' positions only.

    The implied attention matrix is ``Q softmax_pos(K)^T``: nothing normalises the queries, so its rows
    sum to ``sum(Q[i])`` and its entries can be negative."""

    def __init__(self, embed_size: int) -> None:
        super().__init__()
        self.embed_size = embed_size
        self.to_query = nn.Linear(embed_size, embed_size)
        self.to_key = nn.Linear(embed_size, embed_size)
        self.to_value = nn.Linear(embed_size, embed_size)

    def forward(self, x: Tensor) -> Tensor:
        Q = self.to_query(x)
        K = self.to_key(x)
        V = self.to_value(x)
        K = K.softmax(dim=1)
        context = torch.einsum("bnd,bne->bde", K, V)
        output = torch.einsum("bnd,bde->bne", Q, context)
        return output


# ----- «第二章：注意力机制的数学原理», sections 2.2.3 and 2.4.1 (掩码注意力) -------------------------------
def math_scaled_dot_product_attention(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """The math chapter's ``scaled_dot_product_attention``: a mask entry of 0 means blocked."""
    d_k = Q.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    attention_weights = F.softmax(scores, dim=-1)
    output = torch.matmul(attention_weights, V)
    return output, attention_weights


def math_generate_square_subsequent_mask(size: int) -> Tensor:
    """The math chapter's causal mask: "上三角为True（需要掩蔽）", True = blocked."""
    mask = torch.triu(torch.ones(size, size), diagonal=1).bool()
    return mask
