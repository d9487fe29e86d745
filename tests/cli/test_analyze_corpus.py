"""`attnlab analyze --corpus`: per-head means over a corpus file, written as JSON; bad input is one line, exit 2."""

from __future__ import annotations

import json

from attnlab.cli import main


def test_corpus_means_per_head(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("The cat sat on the mat.\n\nA dog barked.\nAttention is all you need.\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["analyze", "--corpus", str(corpus), "--out", str(out), "--batch-size", "2"]) == 0
    doc = json.loads((out / "corpus.json").read_text(encoding="utf-8"))
    assert doc["texts"] == 3 and doc["processes"] == 1 and len(doc["modules"]) == 6
    assert all(len(v) == 6 and len(v[0]) == 12 for v in doc["means"].values())
    for m in ("cls", "sep", "punct", "self", "previous", "next", "band"):  # shares of attention: in [0, 1]
        assert all(0.0 <= x <= 1.0 for row in doc["means"][m] for x in row), m
    assert "over 3 texts" in capsys.readouterr().out


def test_corpus_with_a_text_or_a_missing_file_is_refused(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("one text\n", encoding="utf-8")
    for args, words in ((["some text", "--corpus", str(corpus)], "give no TEXT"),
                        (["--corpus", str(tmp_path / "missing.txt")], "no corpus file")):
        assert main(["analyze", *args, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and words in err, err
    assert not (tmp_path / "out").exists()


def test_a_corpus_that_is_not_utf8_is_one_line_naming_the_file_and_the_byte(tmp_path, capsys):
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes("The cat sat.\nUn café au lait.\n".encode("latin-1"))  # é: 0xE9, byte 19 (from 0)
    assert main(["analyze", "--corpus", str(corpus), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("attnlab analyze: error: "), err
    assert f"corpus file {str(corpus)!r} is not UTF-8: byte 0xE9 at byte offset 19 (line 2" in err, err
    assert not (tmp_path / "out").exists()
