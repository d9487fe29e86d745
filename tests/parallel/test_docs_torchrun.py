"""Every example of the docs that runs under torchrun (a ```python block that starts a group with
``process_group``) runs as written in one process and at 2 torchrun ranks (gloo, ``--standalone``): alone it reports
rank 0 of 1; under torchrun each rank reports its own rank of 2, the ring attention example stays exact and the
sequence-parallel example gives the mean loss of one process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
REPORT = re.compile(r"^rank (\d+) of (\d+): (.*)$", flags=re.M)


def _torchrun_blocks() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            code = m.group(1)
            if "process_group(" in code:
                out.append((f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 2}", code))
    return out


BLOCKS = _torchrun_blocks()


def test_the_torchrun_examples_are_found() -> None:
    assert {name.split(":")[0] for name, _ in BLOCKS} >= {"docs/parallel.md"} and len(BLOCKS) >= 2
    for page in PAGES:  # a python example that speaks of torchrun starts its group, or it would run alone there
        for m in FENCE.finditer(page.read_text(encoding="utf-8")):
            if "torchrun" in m.group(1):
                assert "process_group(" in m.group(1), f"{page.name}: an example under torchrun starts no group"


def _numbers(line: str, label: str) -> list[float]:
    return [float(x) for x in re.findall(rf"{label} ([-+0-9.e]+)", line)]


@pytest.mark.slow
@pytest.mark.parametrize("code", [c for _, c in BLOCKS], ids=[n for n, _ in BLOCKS])
def test_a_torchrun_example_runs_alone_and_at_two_ranks(code: str, tmp_path: Path, child_env: dict[str, str]) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    alone = subprocess.run([sys.executable, str(script)], env=child_env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert alone.returncode == 0, alone.stderr[-3000:]
    logs = tmp_path / "logs"  # each rank's stdout in a file of its own (in one pipe, their lines can interleave)
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          "--log-dir", str(logs), "--redirects", "1", str(script)], env=child_env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr[-3000:]
    printed = [p.read_text(encoding="utf-8") for p in sorted(logs.rglob("stdout.log"))]
    print(alone.stdout, *printed, sep="")  # the figures, seen with -s
    (one,) = REPORT.findall(alone.stdout)
    assert one[:2] == ("0", "1")
    ranks = [r for text in printed for r in REPORT.findall(text)]
    assert sorted((r, w) for r, w, _ in ranks) == [("0", "2"), ("1", "2")]
    for _, _, said in [one, *ranks]:
        assert all(e <= 1e-12 for e in _numbers(said, "largest error"))
    base = _numbers(one[2], "mean loss")
    for _, _, said in ranks:
        got = _numbers(said, "mean loss")
        assert len(got) == len(base) and all(abs(a - b) <= 1e-5 for a, b in zip(got, base, strict=True)), (got, base)
    assert "Traceback" not in two.stderr
