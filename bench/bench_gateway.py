"""Gateway throughput against a rate-limited fake server.

The fake server (Anthropic wire format, real SDK on our side) admits RPM requests per minute and
answers 429 + Retry-After beyond that; the gateway is configured with the same limit. Many
worker threads fire calls at once; we measure completed calls per minute against the limit
(target: at least 95%) and check that every call submitted came back with an answer.
Writes bench/results/gateway.json.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fake server lives with the tests

from engine.llm import LLM, Capabilities, Price, summarize  # noqa: E402
from tests.llm.fake_servers import FakeLLMServer, Reply  # noqa: E402
from tests.llm.support import gateway_for, make_cfg  # noqa: E402

RPM = 1200  # 20 requests/s: a 30 s run covers the full refill behaviour of the buckets
CALLS = 600
WORKERS = 64
LATENCY_S = 0.05  # the fake model's answer time


def fire(llm: LLM) -> tuple[list[float], list[str], float]:
    """CALLS calls from WORKERS threads at once: completion times, failures, start time."""
    done: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        try:
            llm.complete(f"call {i}", role="code", node_id=f"n{i}")
            with lock:
                done.append(time.monotonic())
        except Exception as exc:  # counted, never silently dropped
            with lock:
                failures.append(repr(exc))

    llm.complete("warm-up", role="code")  # SDK import and connection set-up are not throughput
    time.sleep(1.0)  # both buckets hold one second of burst: let them refill after the warm-up
    start = time.monotonic()
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(one, range(CALLS)))
    return done, failures, start


def summary(
    run_dir: Path, done: list[float], failures: list[str], elapsed: float, server: dict[str, int]
) -> dict[str, Any]:
    ledger = summarize(run_dir)["run"]
    done.sort()
    tenth = len(done) // 10
    steady = (len(done) - tenth) / (done[-1] - done[tenth]) * 60 if len(done) > tenth + 1 else float("nan")
    per_min = len(done) / elapsed * 60
    return {
        "limit_rpm": RPM,
        "calls_submitted": CALLS,
        "calls_completed": len(done),
        "calls_failed": len(failures),
        "calls_lost": CALLS - len(done) - len(failures),
        "elapsed_s": round(elapsed, 2),
        "completed_per_min": round(per_min, 1),
        "completed_per_min_steady": round(steady, 1),
        "fraction_of_limit": round(per_min / RPM, 3),
        "fraction_of_limit_steady": round(steady / RPM, 3),
        "server_429s": server["rejected"],
        "http_requests": server["requests"],
        "ledger_calls": ledger["calls"],
        "workers": WORKERS,
        "fake_latency_s": LATENCY_S,
    }


SHOWN = (
    "limit_rpm",
    "calls_completed",
    "calls_failed",
    "calls_lost",
    "elapsed_s",
    "completed_per_min",
    "fraction_of_limit",
    "completed_per_min_steady",
    "fraction_of_limit_steady",
    "server_429s",
)


def main() -> int:
    run_dir = ROOT / "bench" / "gateway.tmp"
    shutil.rmtree(run_dir, ignore_errors=True)
    with FakeLLMServer(Reply.ok("ok", delay_s=LATENCY_S)) as server:
        server.rate_limit(per_second=RPM / 60, burst=RPM / 60)  # same bucket shape as the gateway's
        cfg = make_cfg(
            "anthropic",
            server.url,
            caps=Capabilities(),  # the table has no entry for the fake model
            price=Price(input=1, output=5),
            roles={"code": {"model": "m", "max_tokens": 64}},
            rpm=RPM,
            max_concurrency=32,
            max_retries=8,
            backoff_base_s=0.05,
            backoff_max_s=60.0,
            timeout_s=10,
        )
        gateway = gateway_for(cfg, run_dir)
        done, failures, start = fire(gateway.client())
        elapsed = max(done) - start if done else float("nan")
        gateway.close()
        seen = {"rejected": server.rejected_429, "requests": len(server.requests)}
    result = summary(run_dir, done, failures, elapsed, seen)
    out = ROOT / "bench" / "results" / "gateway.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    shutil.rmtree(run_dir, ignore_errors=True)
    print(f"{'metric':<28}{'value':>12}")
    for key in SHOWN:
        print(f"{key:<28}{result[key]:>12}")
    ok = result["calls_lost"] == 0 and not failures and result["fraction_of_limit_steady"] >= 0.95
    print("PASS" if ok else f"FAIL {failures[:3]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
