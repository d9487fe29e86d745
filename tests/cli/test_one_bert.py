"""One BERT implementation: every command that runs the bundled MiniLM (show, analyze TEXT, analyze --corpus,
analyze --attribution, the lab's POST /api/run) runs attnlab's own ``models.bert.BertEncoder`` and imports no
``transformers.models`` module.  That their numbers equal transformers' is tests/analysis/test_bert_crosscheck.py
(attribution and corpus) and tests/models/test_bert.py (the trace)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# each step runs one surface in this process, then prints the transformers.models modules loaded so far
SCRIPT = """
import json, sys
from attnlab.cli import main

def loaded():
    return sorted(m for m in sys.modules if m.startswith("transformers.models"))

out, corpus = sys.argv[1], sys.argv[2]
text = "The cat sat on the mat because it was tired."
steps = {
    "show": ["show", text, "--out", out + "/show"],
    "analyze TEXT": ["analyze", text, "--out", out + "/analyze"],
    "analyze --corpus": ["analyze", "--corpus", corpus, "--batch-size", "2", "--out", out + "/corpus"],
    "analyze --attribution": ["analyze", "A dog barked.", "--attribution", "--out", out + "/attribution"],
}
seen = {}
for name, argv in steps.items():
    assert main(argv) == 0, name
    seen[name] = loaded()
from attnlab.serve import Lab, catalogue
result = Lab(catalogue()).run("minilm", text)
seen["serve /api/run"] = loaded()
print("RESULT " + json.dumps(seen))
"""


@pytest.mark.slow
def test_minilm_surfaces_import_no_transformers_model(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat.\nA much longer sentence, with a comma and more words.\n\nShort.\n",
                      encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(corpus)], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    seen = json.loads(line.removeprefix("RESULT "))
    assert list(seen) == ["show", "analyze TEXT", "analyze --corpus", "analyze --attribution", "serve /api/run"]
    assert seen == {name: [] for name in seen}, seen  # no surface loaded transformers' modeling code
    doc = json.loads((tmp_path / "attribution" / "analysis.json").read_text(encoding="utf-8"))
    assert len(doc["attribution"]["alti_per_layer"]) == 6  # the attribution ran through all six layers
    assert json.loads((tmp_path / "corpus" / "corpus.json").read_text(encoding="utf-8"))["texts"] == 3
