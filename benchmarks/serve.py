"""Benchmark ``attnlab serve`` as a client meets it: a real server process on 127.0.0.1 and a bounded loop of HTTP
requests (httpx), every phase bounded in count and in time.

Phases:
  start       from starting ``attnlab serve`` to the first page (GET / answered 200);
  minilm-13   POST /api/run on MiniLM, the README's 13-token sentence, from 4 concurrent clients: p50, p99, throughput;
  zh / dates  zh-sentiment and dates-zh, one client: p50, p99;
  minilm-512  MiniLM on 512 tokens (the viewer benchmark's text, cut to fit), one client: p50;
  memory      the server's resident size after the first 100 mixed requests (the four models, compare runs), then every
              500 requests up to --mixed (5,000) or --time-limit seconds, whichever comes first;
  faults      --clients concurrent clients (more than the server's queue) sending good requests mixed with bad ones
              (unknown model, empty text, too long, malformed JSON, wrong content type, layer out of range), plus
              requests whose client disconnects mid-run; it reports requests served, answers by status, latency
              percentiles, and whether the server still answers afterwards.

    python benchmarks/serve.py                       # the whole run (minutes); results/serve.{json,md}
    python benchmarks/serve.py --quick               # a few requests per phase, to check the script
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SENTENCE = "The cat sat on the mat because it was tired."  # 13 tokens with [CLS] and [SEP]
ZH = ["这部电影太好看了", "服务态度很差，不会再来", "质量一般，价格还行", "非常满意，推荐购买", "物流太慢了"]
DATES = ["3 October 1990", "12/05/2001", "le 4 juillet 1976", "15. März 2010", "1999年12月31日"]
EN = ["I like tea.", "Where is the station?", "She reads a book.", "We are friends."]
WORDS = ["cat", "dog", "bird", "child", "teacher", "robot"]


def long_text() -> str:
    spec = importlib.util.spec_from_file_location("viewer_benchmark", HERE / "viewer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.TEXT)


def text_of_tokens(n: int) -> str:
    """The longest prefix (in words) of the viewer benchmark's text that MiniLM reads as at most ``n`` tokens."""
    from attnlab.capturing import load_model

    _, tokenizer, _ = load_model("minilm")
    words = long_text().split()
    lo, hi = 1, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(tokenizer(" ".join(words[:mid]))["input_ids"]) <= n:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def percentiles(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {"n": 0}
    s = sorted(ms)

    def at(q: float) -> float:
        return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]

    return {"n": len(s), "p50_ms": round(at(0.5), 1), "p90_ms": round(at(0.9), 1), "p99_ms": round(at(0.99), 1),
            "max_ms": round(s[-1], 1), "mean_ms": round(statistics.fmean(s), 1)}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str, float]:
    """The server process, its URL and the seconds from its start to the first page."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "serve", "--port", "0", "--queue", str(args.queue)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "http://" not in line:
        raise SystemExit(f"the server did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    url = line.split()[2]
    while httpx.get(url, timeout=30).status_code != 200:
        time.sleep(0.01)
    return proc, url, time.perf_counter() - t0


async def timed(client: httpx.AsyncClient, body: dict[str, Any]) -> tuple[int, float]:
    t = time.perf_counter()
    r = await client.post("/api/run", json=body)
    return r.status_code, (time.perf_counter() - t) * 1000


async def closed_loop(url: str, bodies: list[dict[str, Any]], clients: int, limit_s: float) -> dict[str, Any]:
    """``bodies`` sent by ``clients`` concurrent clients (each waits for its answer), within ``limit_s`` seconds."""
    queue = list(reversed(bodies))
    ms: list[float] = []
    statuses: Counter[int] = Counter()
    deadline = time.perf_counter() + limit_s

    async def one(client: httpx.AsyncClient) -> None:
        while queue and time.perf_counter() < deadline:
            status, t = await timed(client, queue.pop())
            statuses[status] += 1
            if status == 200:
                ms.append(t)

    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        await asyncio.gather(*(one(client) for _ in range(clients)))
    wall = time.perf_counter() - start
    return {**percentiles(ms), "clients": clients, "sent": sum(statuses.values()), "statuses": dict(statuses),
            "throughput_per_s": round(len(ms) / wall, 1), "wall_s": round(wall, 1)}


def mixed_body(i: int, rng: random.Random) -> dict[str, Any]:
    """The i-th request of the mixed load: the four models, new texts, a compare run now and then."""
    kind = i % 5
    if kind == 0:
        return {"model": "minilm", "text": SENTENCE.replace("cat", rng.choice(WORDS)) + f" {i}"}
    if kind == 1:
        return {"model": "zh-sentiment", "text": rng.choice(ZH) + str(i)}
    if kind == 2:
        return {"model": "dates-zh", "text": rng.choice(DATES)}
    if kind == 3:
        return {"model": "tutorial-en-zh", "text": rng.choice(EN)}
    return {"model": "minilm", "text": SENTENCE, "compare": SENTENCE.replace("cat", rng.choice(WORDS))}


async def memory_phase(url: str, pid: int, total: int, limit_s: float) -> dict[str, Any]:
    rng = random.Random(0)
    samples: list[dict[str, float]] = []
    statuses: Counter[int] = Counter()
    ms: list[float] = []
    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for i in range(total):
            if time.perf_counter() - start > limit_s:
                break
            status, t = await timed(client, mixed_body(i, rng))
            statuses[status] += 1
            ms.append(t)
            done = i + 1
            if done in (100,) or done % 500 == 0:
                samples.append({"requests": done, "rss_mb": round(rss_mb(pid), 1),
                                "seconds": round(time.perf_counter() - start, 1)})
    done = sum(statuses.values())
    if not samples or samples[-1]["requests"] != done:
        samples.append({"requests": done, "rss_mb": round(rss_mb(pid), 1),
                        "seconds": round(time.perf_counter() - start, 1)})
    after_100 = next((s["rss_mb"] for s in samples if s["requests"] == 100), None)
    return {"asked": total, "ran": done, "time_limit_s": limit_s, "statuses": dict(statuses), **percentiles(ms),
            "samples": samples, "rss_after_100_mb": after_100, "rss_last_mb": samples[-1]["rss_mb"],
            "growth_mb": None if after_100 is None else round(samples[-1]["rss_mb"] - after_100, 1)}


BAD_REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("unknown model", {"json": {"model": "no-such-model", "text": "x"}}),
    ("empty text", {"json": {"model": "minilm", "text": ""}}),
    ("too long", {"json": {"model": "minilm", "text": "x" * 10_001}}),
    ("too many tokens", {"json": {"model": "minilm", "text": "a " * 990}}),
    ("layer out of range", {"json": {"model": "minilm", "text": "a", "layer": 99}}),
    ("malformed JSON", {"content": b"{not json", "headers": {"content-type": "application/json"}}),
    ("wrong content type", {"content": b"model=minilm",
                            "headers": {"content-type": "application/x-www-form-urlencoded"}}),
]


def killed_mid_run(url: str, body: dict[str, Any]) -> None:
    """A client that sends a request and disconnects before the answer (the server must shrug it off)."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    payload = json.dumps(body).encode()
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /api/run HTTP/1.1\r\nHost: " + f"{host}:{port}".encode() + b"\r\nContent-Type: "
                  b"application/json\r\nContent-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        time.sleep(0.05)  # the run has started (or is queued); leave without reading


async def fault_phase(url: str, clients: int, total: int, limit_s: float, long512: str,
                      kill_share: float = 0.02) -> dict[str, Any]:
    rng = random.Random(1)
    kinds: Counter[str] = Counter()
    statuses: dict[str, Counter[int]] = {}
    ms: list[float] = []
    deadline = time.perf_counter() + limit_s
    counter = iter(range(total))
    killed = 0

    async def one(client: httpx.AsyncClient) -> None:
        nonlocal killed
        for i in counter:
            if time.perf_counter() > deadline:
                return
            roll = rng.random()
            if roll < 0.25:  # a bad request
                name, request = rng.choice(BAD_REQUESTS)
            elif roll < 0.25 + kill_share:  # a long run whose client leaves mid-way
                await asyncio.to_thread(killed_mid_run, url, {"model": "minilm", "text": long512})
                killed += 1
                kinds["killed mid-run"] += 1
                continue
            else:
                name, request = "good", {"json": mixed_body(i, rng)}
            t = time.perf_counter()
            r = await client.post("/api/run", **request)
            if r.status_code == 503:  # a polite client waits as told, then goes on with its next request
                await asyncio.sleep(float(r.headers["retry-after"]))
            kinds[name] += 1
            statuses.setdefault(name, Counter())[r.status_code] += 1
            if name == "good" and r.status_code == 200:
                ms.append((time.perf_counter() - t) * 1000)
            elif r.status_code != 200:
                body = r.json()
                assert set(body) == {"error"} and "\n" not in body["error"], body

    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        before = (await client.get("/healthz")).json()  # the server's counters run from its start: count this phase
        await asyncio.gather(*(one(client) for _ in range(clients)))
        wall = time.perf_counter() - start
        health = (await client.get("/healthz")).json()
        after = await client.post("/api/run", json={"model": "minilm", "text": SENTENCE})
    return {"clients": clients, "requests": sum(kinds.values()), "wall_s": round(wall, 1), "by_kind": dict(kinds),
            "statuses_by_kind": {k: dict(v) for k, v in statuses.items()}, "good_latency": percentiles(ms),
            "killed_mid_run": killed, "healthz_after": health["status"],
            "server_runs": health["runs"] - before["runs"], "server_skipped": health["skipped"] - before["skipped"],
            "run_after": after.status_code}


def table(r: dict[str, Any]) -> str:
    m13, zh, dates, m512 = r["minilm_13"], r["zh_sentiment"], r["dates_zh"], r["minilm_512"]
    mem, faults = r["memory"], r["faults"]
    lines = [
        "| measure | result | target |", "| --- | ---: | ---: |",
        f"| start to first page | {r['start_s']:.2f} s | 5 s |",
        f"| MiniLM 13 tokens, {m13['clients']} clients: p50 / p99 | {m13['p50_ms']:.0f} / {m13['p99_ms']:.0f} ms | "
        f"100 / 300 ms |",
        f"| MiniLM 13 tokens, {m13['clients']} clients: throughput | {m13['throughput_per_s']:.1f} runs/s | |",
        f"| zh-sentiment p50 / p99 | {zh['p50_ms']:.0f} / {zh['p99_ms']:.0f} ms | 50 ms (p50) |",
        f"| dates-zh p50 / p99 | {dates['p50_ms']:.0f} / {dates['p99_ms']:.0f} ms | 50 ms (p50) |",
        f"| MiniLM 512 tokens p50 ({m512['n']} runs) | {m512['p50_ms'] / 1000:.2f} s | 1.5 s |",
        f"| resident memory after 100 mixed requests | {mem['rss_after_100_mb']:.0f} MB | |",
        f"| resident memory after {mem['ran']} mixed requests | {mem['rss_last_mb']:.0f} MB "
        f"({mem['growth_mb']:+.0f} MB) | within 50 MB |",
        f"| faults: {faults['requests']} requests from {faults['clients']} clients, {faults['killed_mid_run']} "
        f"killed mid-run | healthz {faults['healthz_after']}, next run {faults['run_after']} | ok, 200 |",
        f"| faults: model calls the server made / skipped (client gone before its turn) | {faults['server_runs']} / "
        f"{faults['server_skipped']} | |",
        f"| faults: good requests answered 200, p50 / p99 | {faults['good_latency']['p50_ms']:.0f} / "
        f"{faults['good_latency']['p99_ms']:.0f} ms | |",
    ]
    mem_lines = ["| requests | resident MB | seconds |", "| ---: | ---: | ---: |",
                 *(f"| {s['requests']} | {s['rss_mb']:.0f} | {s['seconds']:.0f} |" for s in mem["samples"])]
    fault_lines = ["| request | count | answers (status: count) |", "| --- | ---: | --- |",
                   *(f"| {k} | {n} | {', '.join(f'{s}: {c}' for s, c in sorted(faults['statuses_by_kind'].get(k, {}).items())) or 'no answer read'} |"  # noqa: E501
                     for k, n in sorted(faults["by_kind"].items()))]
    return "\n".join([*lines, "", "Memory over time (mixed requests, one client):", "", *mem_lines, "",
                      "Load and fault test:", "", *fault_lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a few requests per phase (checks the script)")
    parser.add_argument("--mixed", type=int, default=5000, help="mixed requests of the memory phase (default 5000)")
    parser.add_argument("--time-limit", type=float, default=420, help="seconds of the memory phase at most")
    parser.add_argument("--clients", type=int, default=12, help="concurrent clients of the fault phase (default 12)")
    parser.add_argument("--queue", type=int, default=8, help="the server's --queue (default 8)")
    parser.add_argument("--only-faults", action="store_true",
                        help="run the fault phase again and replace it in results/serve.json (the rest is kept)")
    parser.add_argument("--only-latency", action="store_true",
                        help="run the latency phases again and replace them in results/serve.json (the rest is kept)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.only_faults or args.only_latency:
        return again(args)
    n = 10 if args.quick else 1
    proc, url, start_s = start_server(args)
    try:
        text512 = text_of_tokens(512)
        warm = [{"model": m, "text": t} for m, t in (("minilm", SENTENCE), ("zh-sentiment", ZH[0]),
                                                     ("dates-zh", DATES[0]), ("tutorial-en-zh", EN[0]))]
        for body in warm * 3:  # load every model, warm its code paths
            httpx.post(url + "api/run", json=body, timeout=120).raise_for_status()
        results: dict[str, Any] = {"start_s": round(start_s, 2)}
        results.update(latency(url, n, text512))
        mixed = 200 if args.quick else args.mixed
        results["memory"] = asyncio.run(memory_phase(url, proc.pid, mixed, args.time_limit))
        print("memory", results["memory"], flush=True)
        results["faults"] = asyncio.run(fault_phase(url, args.clients, 100 if args.quick else FAULTS, 240, text512))
        print("faults", results["faults"], flush=True)
    finally:
        proc.terminate()
        code = proc.wait(60)
    results["server_exit_code_on_sigterm"] = code
    if not (args.no_write or args.quick):
        write(results)


FAULTS = 400  # requests of the fault phase


def latency(url: str, n: int, text512: str) -> dict[str, Any]:
    """The latency phases (each request size and model); ``n`` divides their request counts (--quick)."""
    results: dict[str, Any] = {}
    results["minilm_13"] = asyncio.run(closed_loop(url, [{"model": "minilm", "text": SENTENCE}] * (400 // n), 4,
                                                   120))
    print("minilm 13", results["minilm_13"], flush=True)
    results["zh_sentiment"] = asyncio.run(closed_loop(
        url, [{"model": "zh-sentiment", "text": ZH[i % len(ZH)]} for i in range(200 // n)], 1, 60))
    results["dates_zh"] = asyncio.run(closed_loop(
        url, [{"model": "dates-zh", "text": DATES[i % len(DATES)]} for i in range(200 // n)], 1, 60))
    print("zh", results["zh_sentiment"], "\ndates", results["dates_zh"], flush=True)
    results["minilm_512"] = asyncio.run(closed_loop(url, [{"model": "minilm", "text": text512}] * (15 // n + 2),
                                                    1, 120))
    print("512", results["minilm_512"], flush=True)
    return results


def again(args: argparse.Namespace) -> None:
    """One part of the run again (the latency phases or the fault phase), the rest of results/serve.json kept."""
    results = json.loads((RESULTS / "serve.json").read_text(encoding="utf-8"))["results"]
    proc, url, start_s = start_server(args)
    try:
        text512 = text_of_tokens(512)
        if args.only_latency:
            for body in [{"model": m, "text": "warm up"} for m in ("minilm", "zh-sentiment", "dates-zh")] * 3:
                httpx.post(url + "api/run", json=body, timeout=120).raise_for_status()
            results["start_s"] = round(start_s, 2)
            results.update(latency(url, 1, text512))
        else:
            results["faults"] = asyncio.run(fault_phase(url, args.clients, FAULTS, 240, text512))
            print("faults", results["faults"], flush=True)
    finally:
        proc.terminate()
        results["server_exit_code_on_sigterm"] = proc.wait(60)
    if not args.no_write:
        write(results)


def write(results: dict[str, Any]) -> None:
    text = table(results)
    print("\n" + text)
    record = {"benchmark": "attnlab serve on 127.0.0.1, httpx clients", "load_average": os.getloadavg(),
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
              "results": results}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "serve.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    note = ("`python benchmarks/serve.py` (see its docstring): one `attnlab serve` process (1 torch thread, the "
            f"default) and httpx clients on the same {os.cpu_count()}-core machine, load average "
            f"{os.getloadavg()[0]:.1f} at the end (other work shares the machine).\n\n")
    (RESULTS / "serve.md").write_text("# attnlab serve: latency, memory, faults\n\n" + note + text + "\n",
                                      encoding="utf-8")
    print(f"\nwrote {RESULTS / 'serve.json'} and {RESULTS / 'serve.md'}")


if __name__ == "__main__":
    main()
