"""attnlab's own BERT encoder against transformers' BertModel: the same weights, tokens, attention and hidden
states, in float64 to rounding and in float32 as the CLI runs it; the folders it refuses go to transformers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import attnlab as al
from attnlab.capturing import load_encoder, load_model
from attnlab.errors import InputError, ModelLoadError
from attnlab.layers import AttentionHook
from attnlab.models.bert import BertEncoder, BertTokenizer, unsupported

transformers = pytest.importorskip("transformers")

MINILM = al.locate("minilm").path
TEXTS = [
    "The cat sat on the mat because it was tired.",
    "Héllo wörld: ÉCOLE, naïve café; Ångström",
    "我喜欢这部电影 ☃☃☃ unbelievably 🙂",
    "\t tabs  and\nnewlines \u00a0 and non-breaking spaces ",
    "don't stop-believing!!! 3.14 $5 e-mail@example.com [MASK] [SEP]",
    "x " * 300,
]


@pytest.fixture(scope="module")
def pair() -> tuple[BertEncoder, BertTokenizer, Any, Any]:
    hf = transformers.AutoModel.from_pretrained(MINILM, local_files_only=True, attn_implementation="eager").eval()
    return (BertEncoder.from_folder(MINILM), BertTokenizer(MINILM), hf,
            transformers.AutoTokenizer.from_pretrained(MINILM, local_files_only=True))


def _ours(model: BertEncoder, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The hidden states and each layer's weights as computed (capture would hand float32 copies)."""
    weights: list[torch.Tensor] = []
    hooks = [m for m in model.modules() if isinstance(m, AttentionHook)]
    detach = [h.attach(lambda call: weights.append(call.weights), weights=True) for h in hooks]
    try:
        with torch.no_grad():
            hidden = model(**inputs)
    finally:
        for d in detach:
            d()
    return hidden, weights


def _theirs(model: Any, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    with torch.no_grad():
        out = model(**inputs, output_attentions=True)
    return out.last_hidden_state, list(out.attentions)


def test_truncation_never_switches_the_shared_tokenizer(pair: tuple[Any, ...]) -> None:
    """``attnlab serve`` tokenizes from several threads: a call that truncates must not switch truncation on in the
    tokenizer another call is using (that raced once in ~70 calls with 2,000-token texts on 8 threads)."""
    _, ours, _, _ = pair
    shared = ours._tok

    class Watch:  # the shared tokenizer, recording what every call to it sees and does
        def __init__(self) -> None:
            self.seen: list[Any] = []

        def encode(self, *args: Any) -> Any:
            self.seen.append(shared.truncation)
            return shared.encode(*args)

        def enable_truncation(self, *args: Any, **kwargs: Any) -> None:
            self.seen.append("switched on")
            shared.enable_truncation(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(shared, name)

    watch = Watch()
    ours._tok = watch
    try:
        cut = ours("a " * 300, truncation=True, max_length=16)
        whole = ours("a " * 300)
    finally:
        ours._tok = shared
    assert cut["input_ids"].shape[1] == 16 and whole["input_ids"].shape[1] == 302
    assert watch.seen == [None]  # only the untruncated call used it, and it was never switched


@pytest.mark.parametrize("text", TEXTS)
def test_tokens_equal_transformers(pair: tuple[Any, ...], text: str) -> None:
    _, ours, _, theirs = pair
    a, b = ours(text), theirs(text, return_tensors="pt")
    assert set(a) == {"input_ids", "token_type_ids", "attention_mask"}
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert ours.convert_ids_to_tokens(a["input_ids"][0].tolist()) == theirs.convert_ids_to_tokens(
        b["input_ids"][0].tolist())


def test_offsets_equal_transformers(pair: tuple[Any, ...]) -> None:
    """``return_offsets_mapping`` (what the unknown-token warning names the characters by) as transformers' fast
    tokenizer gives it, padded rows included."""
    _, ours, _, theirs = pair
    for text in (*TEXTS, "我喜欢这部电影 ☃", "  the   cat\t☃☃ sat "):
        a = ours(text, return_offsets_mapping=True)["offset_mapping"]
        b = theirs(text, return_tensors="pt", return_offsets_mapping=True)["offset_mapping"]
        assert torch.equal(a, b), (text, a, b)
    batch = ours(["a cat", "the cat sat on it"], padding=True, return_offsets_mapping=True)
    assert batch["offset_mapping"].shape == (2, 7, 2) and batch["offset_mapping"][0, 4:].eq(0).all()
    assert "offset_mapping" not in ours("a cat")


def test_pairs_truncation_and_specials_equal_transformers(pair: tuple[Any, ...]) -> None:
    _, ours, _, theirs = pair
    for args in (("Where is the cat?", "The cat is on the mat."), ("a " * 600, "b " * 300), ("a " * 50, "b " * 900)):
        a = ours(*args, truncation=True, max_length=512)
        b = theirs(*args, truncation=True, max_length=512, return_tensors="pt")
        assert all(torch.equal(a[k], b[k]) for k in a)
    assert ours("a " * 600)["input_ids"].shape[1] == 602  # no truncation unless asked (tokenizer.json says 128)
    assert ours.all_special_tokens == theirs.all_special_tokens
    assert ours.all_special_ids == theirs.all_special_ids
    assert (ours.unk_token, ours.unk_token_id, ours.model_max_length) == (
        theirs.unk_token, theirs.unk_token_id, theirs.model_max_length)
    assert ours.get_vocab() == theirs.get_vocab()


def test_float64_equals_transformers(pair: tuple[Any, ...]) -> None:
    """The same computation: in float64, a padded batch of two (one a sentence pair) agrees to rounding."""
    ours, tok, theirs, _ = pair
    ours, theirs = BertEncoder.from_folder(MINILM).double(), theirs.double()
    try:
        first = tok("The cat sat on the mat.", "It was tired.")
        second = tok("Short one.")
        n = first["input_ids"].shape[1]
        inputs = {k: torch.cat([first[k], torch.nn.functional.pad(second[k], (0, n - second[k].shape[1]))])
                  for k in first}  # (2, n), the second padded with zeros (attention_mask 0)
        assert not bool(inputs["attention_mask"].all())
        hidden, weights = _ours(ours, inputs)
        ref_hidden, ref_weights = _theirs(theirs, inputs)
        real = inputs["attention_mask"].bool()
        assert (hidden - ref_hidden)[real].abs().max() < 1e-10  # padded positions' states are not used
        assert len(weights) == len(ref_weights) == 6
        for w, ref in zip(weights, ref_weights, strict=True):
            assert w.dtype == torch.float64 and (w - ref).abs().max() < 1e-12
            assert w[1, :, :, ~real[1]].abs().max() == 0  # no weight on padding
    finally:
        theirs.float()


@pytest.mark.parametrize("text", TEXTS[:3])
def test_float32_close_to_transformers(pair: tuple[Any, ...], text: str) -> None:
    ours, tok, theirs, _ = pair
    inputs = tok(text)
    hidden, weights = _ours(ours, inputs)
    ref_hidden, ref_weights = _theirs(theirs, inputs)
    assert (hidden - ref_hidden).abs().max() < 2e-5
    assert max((w - r).abs().max().item() for w, r in zip(weights, ref_weights, strict=True)) < 1e-5


def test_trace_text_uses_it_and_matches_a_transformers_run(pair: tuple[Any, ...]) -> None:
    """``trace_text("...")`` (the bundled name) runs attnlab's encoder; a loaded transformers model gives the same
    trace: tokens, record names, kinds and weights."""
    _, _, theirs, hf_tok = pair
    model, tokenizer, name = load_encoder("minilm")
    assert isinstance(model, BertEncoder) and isinstance(tokenizer, BertTokenizer) and name == "all-MiniLM-L6-v2"
    text = "The cat sat on the mat because it was tired."
    ours = al.trace_text(text)
    ref = al.trace_text(text, theirs, tokenizer=hf_tok)
    assert ours.tokens == ref.tokens and [r.name for r in ours.records] == [r.name for r in ref.records]
    assert ours.kinds == ref.kinds == ["self"]
    assert (ours.weights - ref.weights).abs().max() < 1e-5
    merged = al.trace_text("unbelievably good", merge="words")
    assert merged.tokens == al.trace_text("unbelievably good", theirs, tokenizer=hf_tok, merge="words").tokens


def test_a_bert_for_classification_folder_loads_without_its_head(tmp_path: Path) -> None:
    """A BertFor* checkpoint keeps the encoder under ``bert.``; its head and pooler are not the encoder's."""
    cfg = transformers.BertConfig(vocab_size=30522, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                                  intermediate_size=37, max_position_embeddings=64, num_labels=3)
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(cfg).save_pretrained(tmp_path)
    hf = transformers.BertForSequenceClassification.from_pretrained(tmp_path, attn_implementation="eager").eval()
    transformers.AutoTokenizer.from_pretrained(MINILM, local_files_only=True).save_pretrained(tmp_path)
    assert unsupported(tmp_path) is None
    model, tokenizer, _ = load_encoder(tmp_path)
    assert isinstance(model, BertEncoder)
    inputs = tokenizer("a tiny model")
    with torch.no_grad():
        ref = hf.bert(**inputs, output_attentions=True)
    hidden, weights = _ours(model, inputs)
    assert (hidden - ref.last_hidden_state).abs().max() < 1e-5
    assert len(weights) == 2
    assert all((w - r).abs().max() < 1e-6 for w, r in zip(weights, ref.attentions, strict=True))


def _folder(tmp_path: Path, **config: Any) -> Path:
    base = json.loads((MINILM / "config.json").read_text(encoding="utf-8"))
    (tmp_path / "config.json").write_text(json.dumps({**base, **config}), encoding="utf-8")
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).symlink_to(MINILM / name)
    return tmp_path


@pytest.mark.parametrize(("change", "reason"), [
    ({"model_type": "roberta"}, "not a BERT model"),
    ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ({"hidden_act": "relu"}, "hidden_act"),
    ({"is_decoder": True}, "is_decoder"),
    ({"num_hidden_layers": 4}, "weights this encoder does not have or lacks"),
])
def test_variants_it_cannot_read_go_to_transformers(tmp_path: Path, change: dict[str, Any], reason: str) -> None:
    folder = _folder(tmp_path, **change)
    assert reason in (unsupported(folder) or "")
    with pytest.raises(ModelLoadError, match="load it with transformers"):
        BertEncoder.from_folder(folder)


def test_no_tokenizer_json_goes_to_transformers(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "tokenizer.json").unlink()
    (folder / "vocab.txt").symlink_to(MINILM / "vocab.txt")
    assert unsupported(folder) == "no model.safetensors or no tokenizer.json"
    model, tokenizer, _ = load_encoder(folder)
    assert isinstance(model, transformers.PreTrainedModel)
    assert load_model(folder)[0] is model  # the same cached transformers model


def test_trace_text_of_the_bundled_model_does_not_import_transformers() -> None:
    """What makes a cold `attnlab show` 4 s faster: nothing on its path imports transformers."""
    code = ("import sys, attnlab as al; t = al.trace_text('The cat sat.'); "
            "assert t.weights.shape == (6, 12, 6, 6); print('transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_an_id_outside_the_vocabulary_is_named(pair: tuple[Any, ...]) -> None:
    _, tok, _, _ = pair
    assert tok.convert_ids_to_tokens([101, 102]) == ["[CLS]", "[SEP]"]
    with pytest.raises(InputError, match=r"token id 1000000 is not in the vocabulary \(30522 ids\)"):
        tok.convert_ids_to_tokens([101, 1_000_000])
