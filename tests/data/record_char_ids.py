"""Record the token ids the tokenizers give today, for tests/data/test_chars.py to pin.

Run once with the classes that existed before the one character tokenizer (at commit 124549e, where ``CharVocab``
and the ``tokenizers``-only classifier and pair tokenizers still were: ``git show 124549e:src/...`` into a scratch
checkout, then ``PYTHONPATH=<it>/src python tests/data/record_char_ids.py``); it writes
``tests/data/char_ids.json``: for each bundled model, each text of ``TEXTS``, the ids its tokenizer (as the model's
loader reads it from the model file's metadata) gives.  The ids depend on the vocabulary only, never on the weights.
Classifier: ``[CLS]`` and the characters; translator: the source ids (``[EOS]`` appended) and the target ids
(``[BOS] ... [EOS]``); language model: one id per character.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
GOLDEN = HERE / "char_ids.json"

TEXTS = [
    "",
    "这本书写得很好",
    "太难吃了，再也不来了！",
    "The cat sat on the mat.",
    "the boy sees a cat",
    "March 5, 2021",
    "2021年3月5日",
    "Monday, 5 March 2021",
    "05/03/2021",
    "１２３ＡＢＣ",  # full-width digits and letters (NFKC folds them on the classifier's and translators' source)
    "  leading and   inner  spaces\t\n",
    "中国人民\n新年好",
    "abc123XYZ+/",
    "😀🚀 emoji",
    "ﬁ ligature and ½ fraction",
    "e\u0301 combining accent",
    "Привет мир",
    "مرحبا",
    "\u200b\u00a0\u3000 odd spaces",
    "\ue000\uf8ff private use",
    "我爱北京天安门。Hello, world! 42",
]

MODELS = ("zh-sentiment", "dates-zh", "dates-zh/luong", "tutorial-en-zh", "zh-lm", "induction-2l")


def old_ids(name: str, text: str) -> dict[str, list[int]]:
    """The ids of ``text`` by the tokenizer classes before the one character tokenizer."""
    from attnlab import locate

    kind = locate(name).kind
    meta = _meta(name)
    if kind == "classifier":
        from attnlab.data import encode, tokenizer_from_json

        return {"ids": encode(tokenizer_from_json(meta["tokenizer"]), [text], 10**9).ids[0]}
    if kind == "translator":
        from attnlab.data import PairTokenizer

        tok = PairTokenizer.from_json(meta["tokenizer"])
        return {"source": tok.encode_source([text], 10**9)[0], "target": tok.encode_target([text], 10**9)[0]}
    from attnlab.data import CharVocab

    return {"ids": CharVocab.from_str(meta["tokenizer"]).encode(text).tolist()}


def _meta(name: str) -> dict[str, str]:
    """The metadata the model's loader reads (its tokenizer JSON among them), without loading the weights."""
    from attnlab import locate

    found = locate(name)
    if found.kind == "classifier":  # the model file's safetensors header
        from attnlab.models import read_model_meta

        return dict(read_model_meta(found.path))
    return dict(json.loads((found.path / "config.json").read_text(encoding="utf-8"))["meta"])  # translator, lm


def main() -> None:
    def row(x: object) -> str:
        return json.dumps(x, ensure_ascii=False)

    models = ",\n".join(f" {row(name)}: [\n" + ",\n".join("  " + row(old_ids(name, t)) for t in TEXTS) + "\n ]"
                         for name in MODELS)
    text = "{\"texts\": [\n" + ",\n".join("  " + row(t) for t in TEXTS) + "\n],\n\"models\": {\n" + models + "\n}}\n"
    assert json.loads(text)["texts"] == TEXTS
    GOLDEN.write_text(text, encoding="utf-8")
    print(f"wrote {GOLDEN}: {len(MODELS)} models x {len(TEXTS)} texts")


if __name__ == "__main__":
    main()
