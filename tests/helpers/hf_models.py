"""Small random Hugging Face causal language models of every architecture attnlab's circuits read, built from configs
(no download) and, where a test needs a folder, saved as a user's would be: ``save_pretrained`` (safetensors) beside a
tokenizer built with ``tokenizers`` (a byte-level BPE trained on a few English sentences)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

ARCHS = ("gpt2", "llama", "qwen2", "mistral")
VOCAB = 300
CONTEXT = 64
CORPUS = ["When Mary and John went to the store, John gave a drink to Mary.",
          "The cat sat on the mat because it was tired.", "One two three four five six seven eight nine ten.",
          "To be, or not to be, that is the question.", "The quick brown fox jumps over the lazy dog."] * 4


def config(arch: str, *, layers: int = 2, width: int = 64, heads: int = 4, kv_heads: int = 2) -> Any:
    import transformers as T

    if arch == "gpt2":
        return T.GPT2Config(n_layer=layers, n_embd=width, n_head=heads, vocab_size=VOCAB, n_positions=CONTEXT,
                            bos_token_id=0, eos_token_id=0)
    common = dict(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                  num_key_value_heads=kv_heads, intermediate_size=2 * width, vocab_size=VOCAB,
                  max_position_embeddings=CONTEXT, bos_token_id=0, eos_token_id=0, pad_token_id=None,
                  tie_word_embeddings=False)
    cls = {"llama": T.LlamaConfig, "qwen2": T.Qwen2Config, "mistral": T.MistralConfig}[arch]
    return cls(**common)


def model(arch: str, *, dtype: torch.dtype = torch.float64, seed: int = 0, **shape: Any) -> Any:
    """A random model of ``arch`` in eval mode, its biases and norm weights moved away from 0 / 1 so that they count."""
    import transformers as T

    torch.manual_seed(seed)
    net = T.AutoModelForCausalLM.from_config(config(arch, **shape)).to(dtype).eval()
    with torch.no_grad():
        for name, p in net.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)
            elif "embed" not in name and "wte" not in name and "wpe" not in name:
                p.mul_(3.0)  # sharper attention than the 0.02 initialisation gives
    return net


def tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>")


def folder(arch: str, where: Path, **shape: Any) -> Path:
    """``where`` holding a random ``arch`` model in float32 and its tokenizer, as ``save_pretrained`` writes them."""
    net = model(arch, dtype=torch.float32, **shape)
    net.save_pretrained(where, safe_serialization=True)
    tokenizer().save_pretrained(where)
    return where
