"""One operator attempt on a worker: LLM proposal, sandboxed run, evaluation, one result.

draft / debug / improve / hyperparameter / ablation / crossover ask the LLM for a plan and code
(one call), run it, parse metrics in the sandbox, plot, and ask for one judgement and, when
there are plots and a vision model, one critique: at most three LLM calls plus bounded re-asks.
replication and heldout re-run known code with another seed or split and use the rules only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.attempt import failure_reason, fresh_workspace, summarize
from engine.contract import PARAMS_FILE, RESULTS_FILE, params_payload
from engine.llm import LLM, BudgetExceeded, LLMError, Message
from engine.llm.types import Completion, LLMRequest
from engine.node import AttemptResult, BudgetRefusal, ExecSummary, MetricSpec
from sandbox.base import Limits, get_provider, kept_artifacts
from search.operators.claims import ClaimBook
from search.operators.outcome import OperatorOutcome
from search.operators.evaluate import Evaluation, critique, judge, new_pngs, png_bytes, read_metrics
from search.operators.prompts import SYSTEM
from search.operators.schemas import accept, proposal_type

LLM_OPERATORS = ("draft", "debug", "improve", "hyperparameter", "ablation", "crossover")
RERUN_OPERATORS = ("replication", "heldout")
EXPERIMENT, PLOT = "experiment.py", "plot.py"


class _Counting:
    """Transport wrapper: the dollars and calls of this attempt (the client returns parsed models)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls, self.dollars = inner, 0, 0.0

    def call(self, request: LLMRequest) -> Completion:
        completion = self.inner.call(request)
        self.calls += 1
        self.dollars += completion.dollars
        return completion


@dataclass
class OperatorJob:
    node_id: str
    attempt: int
    run_dir: Path
    idea: str
    stage: str
    operator: str
    metrics: list[MetricSpec]
    limits: Limits
    plot_limits: Limits
    sandbox: str
    python: str
    seed: int | None
    llm: LLM | None = None
    prompt: str = ""  # the code proposal's user turn, built from the journal on the driver
    plan: str = ""  # known plan of a re-run
    parent_code: str = ""
    parent_plot_code: str = ""
    data: dict[str, Path] = field(default_factory=dict)  # workspace path -> host file
    split: str = "search"
    claims: ClaimBook | None = None
    vision: bool = False
    plots_gate: bool = True
    max_plots: int = 4
    tuning_history: str = ""
    sandbox_options: dict[str, Any] = field(default_factory=dict)

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        started = time.time()
        ws = fresh_workspace(self.run_dir, self.node_id, self.attempt)
        counter = _Counting(self.llm.transport) if self.llm is not None else None
        llm = LLM(counter, max_reasks=self.llm.max_reasks) if self.llm is not None and counter is not None else None
        outcome = OperatorOutcome(operator=self.operator, split=self.split)  # type: ignore[arg-type]
        ev = Evaluation()
        execution = ExecSummary()
        try:
            code, plan = self._propose(llm, outcome, ev)
            if not ev.proposal_error:
                execution = self._evaluate(llm, ws, gpu_ids, code, outcome.plot_code, plan, ev)
        except BudgetExceeded as e:
            # No result: the dispatcher stops the run cleanly and the node re-runs on resume.
            return AttemptResult(status="buggy", refusal=BudgetRefusal(budget="dollars", message=str(e)))
        status, reason, rule = ev.decide(self.plots_gate)
        rel = ws.relative_to(self.run_dir)
        keep = [EXPERIMENT, PLOT, RESULTS_FILE, *ev.plots, *(ev.results.artifacts if ev.results else [])]
        outcome = outcome.model_copy(update=dict(
            status_rule=rule, judgement=ev.judgement, judgement_error=ev.judgement_error,
            plot_critique=ev.critique, critique_error=ev.critique_error,
            plots=[str(rel / p) for p in ev.plots], results_notes=ev.results.notes if ev.results else "",
            llm_calls=counter.calls if counter else 0,
        ))
        return AttemptResult(
            status=status, reason=reason, metrics=ev.metrics, execution=execution,
            artifacts=kept_artifacts(ws, rel, keep),
            workspace=str(rel), started_at=started, finished_at=time.time(),
            cost_usd=counter.dollars if counter else 0.0, code=code or None, plan=plan or None, outcome=outcome,
        )

    # -- steps ----------------------------------------------------------------------------------
    def _propose(self, llm: LLM | None, outcome: OperatorOutcome, ev: Evaluation) -> tuple[str, str]:
        """(code, plan) of the node; fills the proposal's part of `outcome`."""
        if self.operator in RERUN_OPERATORS or llm is None:
            return self.parent_code, self.plan
        try:
            proposal = llm.complete(
                [Message.system(SYSTEM), Message.user(self.prompt)], role="code",
                output_type=proposal_type(self.operator, self.parent_code, self.node_id, self.claims),
                node_id=self.node_id, stage=self.stage, idea=self.idea, attempt=self.attempt,
            )
        except BudgetExceeded:
            raise
        except LLMError as e:
            ev.proposal_error = str(e)[:1000]
            return "", ""
        accepted = accept(proposal, self.parent_code)
        outcome.plot_code = accepted.plot_code or self.parent_plot_code
        outcome.code_change = accepted.change  # type: ignore[assignment]
        outcome.diff_error = accepted.diff_error
        outcome.hyperparameters = proposal.hyperparameters or {}
        outcome.ablation = proposal.ablation or ""
        return accepted.code, proposal.plan

    def _evaluate(self, llm: LLM | None, ws: Path, gpu_ids: Sequence[int], code: str, plot_code: str, plan: str,
                  ev: Evaluation) -> ExecSummary:
        box = get_provider(self.sandbox, **self.sandbox_options).open(ws, gpu_ids=gpu_ids)
        try:
            files = {EXPERIMENT: code.encode(), PARAMS_FILE: self._params(), **self._data_files()}
            if plot_code:
                files[PLOT] = plot_code.encode()
            res = box.exec([self.python, EXPERIMENT], limits=self.limits, files=files)
            ev.metrics, ev.results, problem = read_metrics(box, self.python, self.metrics)
            ev.run_problem = failure_reason(res, self.limits) or problem
            images: list[bytes] = []
            if not ev.run_problem and plot_code and self.operator not in RERUN_OPERATORS:
                pres = box.exec([self.python, PLOT], limits=self.plot_limits)
                ev.plots = new_pngs(res.files, pres, self.max_plots)
                why = failure_reason(pres, self.plot_limits)
                if why or not ev.plots:
                    ev.plot_problem = f"plot.py failed: {why}" if why else "plot.py wrote no PNG figure"
                images, too_big = png_bytes(box, ev.plots)
                ev.plot_problem = ev.plot_problem or too_big
            if llm is not None and self.operator not in RERUN_OPERATORS:
                judge(llm, ev, node_id=self.node_id, stage=self.stage, idea=self.idea, attempt=self.attempt,
                      plan=plan, code=code, res=res, tuning_history=self.tuning_history)
                if images and self.vision and not (ev.judgement is not None and ev.judgement.is_buggy):
                    critique(llm, ev, images, node_id=self.node_id, stage=self.stage, idea=self.idea,
                             attempt=self.attempt, plan=plan)
        finally:
            box.close()
        return summarize(res)

    def _params(self) -> bytes:
        return params_payload(  # `split` is the held-out switch
            {}, seed=self.seed, node_id=self.node_id, stage=self.stage, attempt=self.attempt, split=self.split
        )

    def _data_files(self) -> dict[str, bytes]:
        return {name: path.read_bytes() for name, path in self.data.items()}
