"""Evaluating one attempt: metrics through a sandboxed parser, plots, the LLM judgement, the
vision critique, and the documented rules that make a node buggy or good (docs/search.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.contract import MAX_RESULTS_BYTES, FileSource, ResultsFile, parse_results, read_capped
from engine.llm import LLM, BudgetExceeded, LLMError, Message
from engine.llm.types import PNG_MAGIC
from engine.node import ExecSummary, MetricSpec, MetricValue
from sandbox.base import ExecResult, Limits, Sandbox
from search.agentic.operators.outcome import StatusRule
from search.agentic.operators.prompts import critique_prompt, fmt_metrics, judge_prompt
from search.agentic.operators.schemas import Judgement, PlotCritique

PARSER_FILE = "silva_parse_results.py"
PARSED_FILE = "silva_metrics.json"
PARSER_SOURCE = (Path(__file__).parent / PARSER_FILE).read_bytes()
PARSER_LIMITS = Limits(wall_s=30, memory_mb=512)
MAX_PNG_BYTES = 5 * 1024 * 1024


@dataclass
class Evaluation:
    """What is known about an attempt, gathered step by step; `decide` turns it into a status."""

    proposal_error: str = ""
    run_problem: str = ""  # the process failed, or results.json is missing or invalid
    metrics: list[MetricValue] = field(default_factory=list)
    results: ResultsFile | None = None
    plots: list[str] = field(default_factory=list)
    plot_problem: str = ""
    judgement: Judgement | None = None
    judgement_error: str = ""
    critique: PlotCritique | None = None
    critique_error: str = ""

    def decide(self, plots_gate: bool) -> tuple[Literal["good", "buggy"], str, StatusRule]:
        """(status, reason, rule): the first rule that fails makes the node buggy."""
        if self.proposal_error:
            return "buggy", f"proposal failed: {self.proposal_error}", "proposal"
        if self.run_problem:
            return "buggy", self.run_problem, "execution"
        if self.judgement is not None and self.judgement.is_buggy:
            return "buggy", f"judged buggy: {self.judgement.reason}", "judgement"
        if plots_gate and self.plot_problem:
            return "buggy", self.plot_problem, "plots"
        if plots_gate and self.critique is not None and not self.critique.acceptable:
            return "buggy", f"plots rejected by the critique: {self.critique.reason}", "plots"
        note = (self.judgement.summary if self.judgement else "") or (
            self.results.notes if self.results else ""
        )
        return "good", note, "ok"


def read_metrics(
    box: Sandbox, python: str, specs: list[MetricSpec]
) -> tuple[list[MetricValue], ResultsFile | None, str]:
    """Run the parser in the sandbox; validate its small output on the host."""
    res = box.exec([python, PARSER_FILE], limits=PARSER_LIMITS, files={PARSER_FILE: PARSER_SOURCE})
    if not res.ok or PARSED_FILE not in res.files:
        return [], None, f"the results parser failed (exit {res.exit_code}): {res.stderr[-300:]}"
    raw, unreadable = read_capped(box, PARSED_FILE, res.files, MAX_RESULTS_BYTES)
    if raw is None:
        return [], None, unreadable
    try:
        error = json.loads(raw).get("error")
    except (ValueError, AttributeError):
        error = f"{PARSED_FILE} is not a JSON object (the parser was tampered with?)"
    if error:
        return [], None, str(error)[:500]
    return parse_results(raw, specs)


def new_pngs(before: list[str], after: ExecResult, limit: int) -> list[str]:
    seen = set(before)
    return [f for f in after.files if f.lower().endswith(".png") and f not in seen][:limit]


def png_bytes(box: FileSource, paths: list[str]) -> tuple[list[bytes], str]:
    """The PNG images among `paths`, and a plot problem ('' if none): a figure over
    MAX_PNG_BYTES is never read into memory."""
    out: list[bytes] = []
    for p in paths:
        data, problem = read_capped(box, p, [p], MAX_PNG_BYTES)
        if data is None:
            return out, f"plot {problem}"
        if data.startswith(PNG_MAGIC):
            out.append(data)
    return out, ""


def judge(
    llm: LLM,
    ev: Evaluation,
    *,
    node_id: str,
    stage: str,
    idea: str,
    attempt: int,
    plan: str,
    code: str,
    res: ExecSummary | None,
    tuning_history: str,
    blocking: bool = False,
) -> None:
    """One structured judgement; a failed call is recorded, never fatal (rules still apply).
    BudgetExceeded propagates: the attempt is then given back, not judged. `blocking`: the
    stage's decision waits for it (the gateway sends it twice at once)."""
    exit_line = (
        "not run"
        if res is None
        else (
            f"exit code {res.exit_code}, {res.wall_s:.1f} s"
            + (", TIMED OUT" if res.timed_out else "")
            + (", OUT OF MEMORY" if res.oom_killed else "")
        )
    )
    prompt = judge_prompt(
        plan=plan,
        code=code,
        exit_line=exit_line,
        stdout=res.stdout_tail if res else "",
        stderr=res.stderr_tail if res else "",
        metrics=fmt_metrics(ev.metrics),
        results_notes=ev.results.notes if ev.results else "",
        rule_problem=ev.run_problem,
        plots=", ".join(ev.plots) or (ev.plot_problem or "none"),
        tuning_history=tuning_history,
        budget=llm.budget("feedback"),
    )
    try:
        verdict = llm.complete(
            prompt,
            role="feedback",
            output_type=Judgement,
            node_id=node_id,
            stage=stage,
            idea=idea,
            attempt=attempt,
            blocking=blocking,
            context={"judge": "run", "node": node_id, "stage": stage},
        )
    except BudgetExceeded:
        raise
    except LLMError as e:
        ev.judgement_error = str(e)[:500]
        return
    ev.judgement = verdict


def critique(
    llm: LLM,
    ev: Evaluation,
    images: list[bytes],
    *,
    node_id: str,
    stage: str,
    idea: str,
    attempt: int,
    plan: str,
    blocking: bool = False,
) -> None:
    prompt = critique_prompt(plan=plan, metrics=fmt_metrics(ev.metrics), names=ev.plots)
    try:
        verdict = llm.complete(
            [Message.user(prompt, images=images)],
            role="vision",
            output_type=PlotCritique,
            node_id=node_id,
            stage=stage,
            idea=idea,
            attempt=attempt,
            blocking=blocking,
            context={"critique": "plots", "node": node_id},
        )
    except BudgetExceeded:
        raise
    except LLMError as e:
        ev.critique_error = str(e)[:500]
        return
    ev.critique = verdict
