"""What one request at the lab's limits costs (issue 40): a real ``attnlab serve`` on 127.0.0.1 with its defaults
(``--max-chars 10000``, ``--timeout 30``, ``--cache 4``) and 200 requests of every model at the limits: 10,000
characters of Chinese, English and random text to ``POST /api/run``, ``/api/ablate`` and ``/api/attribute``, every
sampling setting at its bounds (temperature 1e-300 and 1e308, top_k 0 and huge, top_p 5e-324 and 1, the penalty at
1e308, no_repeat_ngram large, seeds at 0 and 2**63 - 1), and, during a 10,000-character zh-sentiment request, a
MiniLM request.  It records each answer's status and time, the server's peak resident memory (VmHWM) and whether it
still answers afterwards; and with ``--cache 1``, the resident memory with three models used in turn.

    python benchmarks/serve_limits.py            # results/serve_limits.{json,md}
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import string
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
_spec = importlib.util.spec_from_file_location("serve_benchmark", HERE / "serve.py")
assert _spec is not None and _spec.loader is not None
serve_benchmark = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve_benchmark)

MODELS = ["minilm", "zh-sentiment", "dates-zh", "tutorial-en-zh", "zh-lm", "induction-2l"]
SAMPLINGS = [{"temperature": 1e-300}, {"temperature": 1e308}, {"top_k": 0}, {"top_k": 2**62}, {"top_p": 5e-324},
             {"top_p": 1.0}, {"repetition_penalty": 1e308}, {"no_repeat_ngram": 2**31}, {"seed": 2**63 - 1},
             {"greedy": True, "seed": 0}]


def texts(n: int, rng: random.Random) -> dict[str, str]:
    zh = "这家店在市中心的一条小街上，服务员给我们拿了菜单，菜上齐了，味道很好，价格也合适。"
    en = "The cat sat on the mat because it was tired, and the dog watched it from the door. "
    return {"zh": (zh * (n // len(zh) + 1))[:n], "en": (en * (n // len(en) + 1))[:n],
            "random": "".join(rng.choice(string.printable + "中文字符混合") for _ in range(n))}


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def requests(rng: random.Random, n: int) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    at = texts(10_000, rng)
    while len(out) < n:
        model = MODELS[len(out) % len(MODELS)]
        which = rng.choice(list(at))
        text = at[which] if rng.random() < 0.5 else at[which][: rng.choice([10, 40, 100, 1000, 1500])]
        route = rng.choice(["/api/run", "/api/run", "/api/ablate", "/api/attribute"])
        body: dict[str, Any] = {"model": model, "text": text}
        if route == "/api/ablate":
            body |= {"layer": 0, "head": 0}
        if model in ("zh-lm", "induction-2l") and route != "/api/ablate":
            body["sampling"] = rng.choice(SAMPLINGS)
        out.append((route, body))
    return out


def cache_rss(cache: int) -> list[float]:
    """The server's resident memory (MB) after each request of three rounds over four models, with ``--cache``."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "serve", "--port", "0", "--cache", str(cache)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().split()[2]
    out = []
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            for _ in range(3):
                for model, text in (("minilm", "The cat sat."), ("zh-sentiment", "这本书写得很好"),
                                    ("dates-zh", "March 5, 2021"), ("zh-lm", "中国")):
                    assert client.post("/api/run", json={"model": model, "text": text}).status_code == 200
                    out.append(round(serve_benchmark.rss_mb(proc.pid), 1))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS / "serve_limits.json")
    args = parser.parse_args()
    rng = random.Random(0)
    proc, url, start_s = serve_benchmark.start_server(argparse.Namespace(queue=8))
    rows = []
    statuses: Counter[str] = Counter()
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            for route, body in requests(rng, args.requests):
                t = time.perf_counter()
                r = client.post(route, json=body)
                ms = (time.perf_counter() - t) * 1000
                rows.append({"route": route, "model": body["model"], "chars": len(body["text"]),
                             "status": r.status_code, "ms": round(ms, 1)})
                statuses[f"{route} {r.status_code}"] += 1
            # a MiniLM request while a 10,000-character zh-sentiment request is in the server
            slow_ms: list[float] = []

            def slow() -> None:
                t = time.perf_counter()
                httpx.post(f"{url}/api/run", json={"model": "zh-sentiment", "text": "好" * 10_000}, timeout=60)
                slow_ms.append((time.perf_counter() - t) * 1000)

            thread = threading.Thread(target=slow)
            thread.start()
            time.sleep(0.05)
            t = time.perf_counter()
            beside = client.post("/api/run", json={"model": "minilm", "text": "The cat sat."})
            beside_ms = (time.perf_counter() - t) * 1000
            thread.join()
            alive = client.get("/healthz").status_code
        peak = peak_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    slowest = max(rows, key=lambda r: r["ms"])
    result = {"requests": len(rows), "statuses": dict(sorted(statuses.items())), "peak_rss_mb": round(peak, 1),
              "slowest": slowest, "over_30_s": sum(r["ms"] > 30_000 for r in rows),
              "five_hundreds": sum(r["status"] >= 500 for r in rows), "healthz_after": alive,
              "minilm_beside_10k_zh_sentiment": {"status": beside.status_code, "ms": round(beside_ms, 1),
                                                 "the_long_one_ms": round(slow_ms[0], 1) if slow_ms else None},
              "start_s": round(start_s, 2), "python": sys.version.split()[0],
              "rss_mb_by_request_cache_1": cache_rss(1), "rss_mb_by_request_cache_4": cache_rss(4)}
    args.out.write_text(json.dumps({**result, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
