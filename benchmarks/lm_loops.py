"""Does generation loop?  (issue 31, section 5)  The bundled zh-lm continues 5 prompts by 100 characters under
several settings (greedy once, sampled with seeds 0-3) and counts the generations that end in a loop
(``attnlab.trained.find_loop``: a unit said back to back at least 3 times and 6 characters at the end).

    python benchmarks/lm_loops.py

The same counts are in docs/lm.md ("Generation"); the first 60 characters of two generations per setting print
beside them.
"""

from __future__ import annotations

import warnings

import torch

from attnlab.trained import load_language_model

PROMPTS = ["中国", "今天", "北京市", "经济发展", "人民日报记者"]
OFF = {"repetition_penalty": 1.0, "no_repeat_ngram": 0}
SETTINGS = {
    "greedy": {"greedy": True, **OFF},
    "greedy, default penalties": {"greedy": True},
    "temperature 1 (the old default)": {"temperature": 1.0, "top_p": 1.0, **OFF},
    "temperature 0.8, top-p 0.9, no penalties": {"temperature": 0.8, "top_p": 0.9, **OFF},
    "the defaults": {},
}


def main() -> None:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # each loop warns; they are counted here instead
    lm = load_language_model("zh-lm")
    for name, settings in SETTINGS.items():
        loops = n = 0
        shown = []
        for prompt in PROMPTS:
            for seed in [0] if settings.get("greedy") else range(4):
                out = lm.generate(prompt, max_tokens=100, seed=seed, **settings)
                n += 1
                loops += out.loop is not None
                if seed == 0:
                    shown.append(prompt + "|" + lm.vocab.decode(out.ids)[:60].replace("\n", " "))
        print(f"{name}: {loops} of {n} end in a loop")
        print("   ", shown[0])
        print("   ", shown[3])


if __name__ == "__main__":
    main()
