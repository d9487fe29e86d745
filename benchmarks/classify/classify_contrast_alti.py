"""Does the clause after a contrast word carry the prediction (issue 30)?  On the held-out suite's contrast and
concession cases (zh-sentiment-heldout, MFT), ALTI-Logit (:func:`attnlab.analysis.alti_logit`) attributes the
margin of one label's logit over the other's (the two labels' ALTI-Logit rows subtracted) to the input characters;
the case counts when the characters after the contrast word (但是, 可是, 不过, 就是, 只是, 还是, 却: the first one
after the first comma) move that margin more, in absolute value of their sum, than the characters before it (the
contrast word itself and punctuation are in neither).  The sign says which way each clause pushes; the magnitude,
which clause the prediction rests on: in 这本书写得很好，但是太贵了 the bundled model's 很 and 好 push +0.27 each
towards pos and 贵 +0.02, a case that does not count.  ``right_and_after`` counts the cases where also the
prediction is the expected label.

    PYTHONPATH=src python benchmarks/classify/classify_contrast_alti.py [MODEL ...]    # default: zh-sentiment
"""

from __future__ import annotations

import json
import re
import sys

import torch

from attnlab.analysis import alti_logit
from attnlab.suites import read_suite
from attnlab.training import load_trained

CONTRAST = re.compile("但是|可是|不过|就是|只是|但|却|还是")
PUNCT = set("，。！？、；,.!? ")


def share(model: str) -> dict[str, object]:
    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    clf = load_trained(model)
    net = clf.model.eval()
    labels = list(clf.labels)
    rows = []
    for case in read_suite("zh-sentiment-heldout").cases:
        if case.capability not in ("contrast", "concession") or case.type != "MFT":
            continue
        text = case.inputs[0]
        m = CONTRAST.search(text, text.find("，"))  # the contrast word of the second clause
        ids = clf.encode([text])[0][0]
        if m is None or len(ids) != len(text) + 1:  # one id per character after the leading [CLS]
            rows.append({"text": text, "skipped": True})
            continue
        k = labels.index(case.expect["label"])
        x = torch.tensor([ids])  # (1, n + 1)
        margin = alti_logit(net, x, k).tokens - alti_logit(net, x, 1 - k).tokens  # (n + 1,)
        chars = margin[1:]
        before = sum(float(chars[i]) for i in range(m.start()) if text[i] not in PUNCT)
        after = sum(float(chars[i]) for i in range(m.end(), len(text)) if text[i] not in PUNCT)
        right = labels[int(net(x)[0].argmax())] == case.expect["label"]
        rows.append({"text": text, "capability": case.capability, "before": round(before, 4),
                     "after": round(after, 4), "after_wins": abs(after) > abs(before), "right": right})
    scored = [r for r in rows if not r.get("skipped")]
    by_cap = {cap: [r for r in scored if r["capability"] == cap] for cap in ("contrast", "concession")}
    return {"model": model, "cases": len(scored), "skipped": len(rows) - len(scored),
            "after_wins": sum(r["after_wins"] for r in scored),
            "right_and_after": sum(r["after_wins"] and r["right"] for r in scored),
            "share": round(100 * sum(r["after_wins"] for r in scored) / max(1, len(scored)), 1),
            **{f"share_{cap}": round(100 * sum(r["after_wins"] for r in rs) / max(1, len(rs)), 1)
               for cap, rs in by_cap.items()}}


def main() -> None:
    for model in sys.argv[1:] or ["zh-sentiment"]:
        print(json.dumps(share(model), ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
