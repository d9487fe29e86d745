"""Every example of the docs that runs under torchrun (a ```python block that starts a group with
``process_group``) runs as written in one process and at 2 torchrun ranks (gloo, ``--standalone``): alone it reports
rank 0 of 1; under torchrun each rank reports its own rank of 2, the ring attention example stays exact and the
sequence-parallel example gives the mean loss of one process."""

from __future__ import annotations

import random
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


# ----- the torchrun command lines of the docs ---------------------------------------------------------------------

SHELL = re.compile(r"^```(?:text|bash|sh|console)\n(.*?)^```", flags=re.S | re.M)
WORDS = ["中国", "人民", "经济", "发展", "北京", "世界", "新年", "讲话", "希望", "工作", "生活", "国家", "我们", "的"]


def _torchrun_commands() -> list[tuple[str, str]]:
    """Every command line of a text/shell block that starts with torchrun (continuation lines joined), with the
    page it is on, each once."""
    found: dict[str, str] = {}
    for page in PAGES:
        for m in SHELL.finditer(page.read_text(encoding="utf-8")):
            for line in m.group(1).replace("\\\n", " ").splitlines():
                line = line.split("  #")[0].strip()
                if line.startswith("torchrun "):
                    found.setdefault(" ".join(line.split()), str(page.relative_to(ROOT)))
    return sorted(found.items())


COMMANDS = _torchrun_commands()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_run_here(command: str, tmp_path: Path) -> tuple[list[list[str]], Path]:
    """The command as written, made to run here at 2 ranks in about a minute: the user's own files (``--data
    book.txt``) made up, ``--out`` into ``tmp_path``, 2 optimizer steps (``--max-steps 2``), no progress bar; the
    two-machine example as its two nodes on this machine, one process each, with loopback as MASTER. Returns the
    processes to start together and the run folder."""
    words = command.split()[1:]
    out = tmp_path / Path(words[words.index("--out") + 1]).name
    words[words.index("--out") + 1] = str(out)
    if "--data" in words and words[words.index("--data") + 1].endswith(".txt"):
        book = tmp_path / words[words.index("--data") + 1]
        rng = random.Random(0)  # 400 paragraphs of 30 words: every split holds windows of the default context
        book.write_text("\n\n".join("".join(rng.choice(WORDS) for _ in range(30)) + "。" for _ in range(400)) + "\n",
                        encoding="utf-8")
        words[words.index("--data") + 1] = str(book)
    words += ["--max-steps", "2", "--no-progress"]
    launcher = [sys.executable, "-m", "torch.distributed.run"]
    if "--nnodes" not in words:
        assert words[words.index("--nproc_per_node") + 1] == "2", command  # the docs' examples run 2 ranks
        return [[*launcher, *words]], out
    endpoint = f"127.0.0.1:{_free_port()}"
    nodes = []
    for rank in ("0", "1"):
        node = [endpoint if w.startswith("MASTER:") else w for w in words]
        node[node.index("--nproc_per_node") + 1] = "1"
        node[node.index("--node_rank") + 1] = rank
        nodes.append([*launcher, *node])
    return nodes, out


@pytest.mark.slow
@pytest.mark.parametrize(("command", "page"), COMMANDS, ids=[f"{p}: {c[:70]}" for c, p in COMMANDS])
def test_a_torchrun_command_of_the_docs_runs_at_two_ranks(command: str, page: str, tmp_path: Path,
                                                          child_env: dict[str, str]) -> None:
    runs, out = _as_run_here(command, tmp_path)
    env = {**child_env, "PET_MASTER_PORT": str(_free_port())}  # torchrun's --master_port, left as written: not 29500
    procs = [subprocess.Popen(run, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for run in runs]
    try:
        done = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for code, stdout, stderr in done:
        assert code == 0, (stdout[-2000:], stderr[-3000:])
    printed = "".join(stdout for _, stdout, _ in done)
    assert "on 2 process(es)" in printed, printed[-2000:]  # two ranks, not two runs of one
    if "--sequence-parallel" in command:
        assert "(sequence-parallel: 1/2 of every window each)" in printed, printed[-2000:]
    assert (out / "final.json").is_file() and (out / "model.safetensors").is_file()


def test_every_torchrun_command_of_the_docs_is_found() -> None:
    pages = {page for _, page in COMMANDS}
    assert {"README.md", "docs/training.md", "docs/translate.md", "docs/lm.md"} <= pages, COMMANDS
    assert any("--nnodes 2" in command for command, _ in COMMANDS)
