"""Reviewing throughput through the gateway at a configured rate limit.

A run directory holds PAPERS compiled papers (a forest's writeups). Each gets REVIEWS reviews
and a meta-review, all through one in-process gateway into a fake OpenAI server (real SDK on our
side) that answers after LATENCY_S and itself admits RPM requests per minute (429 + Retry-After
beyond). The gateway is configured with the same limit. Reported: reviews completed per minute
against the ceiling the limit allows (RPM x reviews per LLM call), LLM calls and request bytes
per review, and that every review succeeded. Writes bench/results/review.json.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fake server and the paper generator live with the tests

from engine.executor import InProcessExecutor  # noqa: E402
from engine.llm import Capabilities, Price, summarize  # noqa: E402
from review import ReviewConfig, review_all  # noqa: E402
from review.integrity import run_checks  # noqa: E402
from review.paper import resolve  # noqa: E402
from tests.llm.fake_servers import FakeLLMServer, Recorded, Reply  # noqa: E402
from tests.llm.support import gateway_for, make_cfg  # noqa: E402
from tests.review.papers import META, make_run, review_answer  # noqa: E402

RPM = 600
LATENCY_S = 0.5  # the fake model's answer time
PAPERS = 12
REVIEWS = 5
MAX_PARALLEL = 32


def answer(rec: Recorded) -> Reply:
    last = rec.body["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last)
    data = META if "Write the meta-review form." in text else review_answer()  # the area chair's request
    return Reply("json", data=data, delay_s=LATENCY_S, usage=(3000, 400, 0))


def review_papers(run_dir: Path) -> tuple[list[Any], float, dict[str, Any], float]:
    """Every paper reviewed through the gateway: results, wall seconds, what the server saw, and the
    warm-up call's dollars (left out of the per-review figures)."""
    with FakeLLMServer() as server:
        server.handler = answer
        server.rate_limit(per_second=RPM / 60, burst=RPM / 60)
        cfg = make_cfg(
            "openai",
            server.url,
            caps=Capabilities(),  # the table has no entry for the fake model: no vision
            price=Price(input=3, output=15),
            roles={"review": {"model": "m", "max_tokens": 2048}},
            rpm=RPM,
            max_concurrency=MAX_PARALLEL,
            max_retries=8,
            backoff_base_s=0.05,
            backoff_max_s=60.0,
            timeout_s=30,
        )
        gateway = gateway_for(cfg, run_dir)
        review_cfg = ReviewConfig(reviews=REVIEWS, max_parallel=MAX_PARALLEL)
        # Imports (the SDK, scipy, imagehash) and connection set-up are not throughput: warm them up,
        # then let both one-second buckets refill.
        warm = gateway.client().complete("warm-up", role="review")
        run_checks(resolve(run_dir / "paper" / "idea-0")[0], review_cfg)
        time.sleep(1.0)
        calls_before, bytes_before = (
            len(server.requests),
            sum(len(json.dumps(r.body)) for r in server.requests),
        )
        start = time.monotonic()
        results = review_all(run_dir, gateway.client(), review_cfg, InProcessExecutor(MAX_PARALLEL))
        elapsed = time.monotonic() - start
        gateway.close()
        seen = {
            "request_bytes": sum(len(json.dumps(r.body)) for r in server.requests) - bytes_before,
            "http_requests": len(server.requests) - calls_before,
            "server_429s": server.rejected_429,
        }
    return results, elapsed, seen, warm.dollars


def summary(
    run_dir: Path, results: list[Any], elapsed: float, seen: dict[str, Any], warm_dollars: float
) -> dict[str, Any]:
    ledger = summarize(run_dir)["run"]
    reviews_ok = sum(r.reviews_used for r in results)
    reviews = PAPERS * REVIEWS
    calls_per_paper = REVIEWS + 1  # no reflection rounds: one call per review, one meta-review
    ceiling = RPM * REVIEWS / calls_per_paper
    per_min = reviews_ok / elapsed * 60
    return {
        "limit_rpm": RPM,
        "fake_latency_s": LATENCY_S,
        "papers": PAPERS,
        "reviews_per_paper": REVIEWS,
        "reviews_ok": reviews_ok,
        "meta_reviews_ok": sum(r.meta_review is not None and r.meta_review.form is not None for r in results),
        "elapsed_s": round(elapsed, 2),
        "reviews_per_min": round(per_min, 1),
        "ceiling_reviews_per_min": round(ceiling, 1),
        "fraction_of_ceiling": round(per_min / ceiling, 3),
        "llm_calls": ledger["calls"] - 1,  # less the warm-up
        "llm_calls_per_review": round((ledger["calls"] - 1) / reviews, 3),
        "request_bytes_per_review": round(seen["request_bytes"] / reviews),
        "http_requests": seen["http_requests"],
        "server_429s": seen["server_429s"],
        "dollars_per_review_incl_meta": round((ledger["dollars"] - warm_dollars) / reviews, 5),
    }


def main() -> int:
    work = ROOT / "bench" / "review.tmp"
    shutil.rmtree(work, ignore_errors=True)
    run_dir = make_run(work / "run", {"idea-0": False})
    for k in range(1, PAPERS):
        shutil.copytree(run_dir / "paper" / "idea-0", run_dir / "paper" / f"idea-{k}")
    result = summary(run_dir, *review_papers(run_dir))
    out = ROOT / "bench" / "results" / "review.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    if "--keep" not in sys.argv:
        shutil.rmtree(work, ignore_errors=True)
    for key, value in result.items():
        print(f"{key:<28}{value:>14}")
    ok = (
        result["reviews_ok"] == PAPERS * REVIEWS
        and result["meta_reviews_ok"] == PAPERS
        and result["fraction_of_ceiling"] >= 0.8
    )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
