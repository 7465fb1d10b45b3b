"""One operator attempt on a worker: LLM proposal, sandboxed run, evaluation, one result.

draft / debug / improve / hyperparameter / ablation / crossover ask the LLM for a plan and code
(one call), run it, parse metrics in the sandbox, plot, and ask for one judgement and, when
there are plots and a vision model, one critique: at most three LLM calls plus bounded re-asks.
replication and heldout re-run known code with another seed or split, and template runs a
template's own experiment (search/template/seed.py); these use the rules only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from engine.attempt import failure_reason, fresh_workspace, summarize
from engine.blobs import Text, lazy_text, register
from engine.contract import PARAMS_FILE, RESULTS_FILE, ResultsFile, params_payload
from engine.llm import LLM, BudgetExceeded, LLMError, Message
from engine.llm.types import Completion, LLMRequest
from engine.node import AttemptResult, BudgetRefusal, ExecSummary, MetricSpec, MetricValue, StepResult
from engine.outcome import NodeOutcome
from sandbox.base import HostWorkspace, Limits, get_provider, kept_artifacts
from search.agentic.operators.claims import ClaimBook
from search.agentic.operators.evaluate import Evaluation, critique, judge, new_pngs, png_bytes, read_metrics
from search.agentic.operators.outcome import CodeChange, OperatorOutcome
from search.agentic.operators.prompts import SYSTEM
from search.agentic.operators.schemas import LISTED_AS_TRIED, accept, proposal_type

LLM_OPERATORS = ("draft", "debug", "improve", "hyperparameter", "ablation", "crossover")
RERUN_OPERATORS = ("replication", "heldout", "template")
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


Step = Literal["all", "think", "run", "judge"]


class Proposed(NodeOutcome):
    """The think step's output: the node's plan and code (or why the proposal failed)."""

    family: str = "proposed"
    code: Text = ""
    plan: Text = ""
    plot_code: Text = ""
    code_change: CodeChange = "rerun"
    diff_error: str = ""
    hyperparameters: dict[str, Any] = Field(default_factory=dict)
    ablation: str = ""
    proposal_error: str = ""
    exhausted: bool = False  # the last answer named a setting or ablation the model was shown as tried
    llm_calls: int = 0


# The proposal's code and plans are payloads: stored as blobs when large (engine/blobs.py).
lazy_text(Proposed, "code", "plan", "plot_code")


class Ran(NodeOutcome):
    """The run step's output: what the sandboxed experiment, parser and plot script produced."""

    family: str = "ran"
    workspace: str  # run-dir relative
    execution: ExecSummary
    metrics: list[MetricValue] = Field(default_factory=list)
    results_notes: str = ""
    result_artifacts: list[str] = Field(
        default_factory=list
    )  # workspace-relative, as results.json named them
    plots: list[str] = Field(default_factory=list)  # workspace-relative PNGs
    run_problem: str = ""
    plot_problem: str = ""


@dataclass
class OperatorJob:
    """One operator attempt, or one step of it. `step="all"` runs think, run and judge in one
    job holding the node's resources; a pipelined attempt is three jobs, and only `run` holds
    CPUs/GPUs: the LLM never keeps an accelerator waiting."""

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
    params: dict[str, Any] = field(default_factory=dict)  # silva_params.json "params" (a template's defaults)
    split: str = "search"
    claims: ClaimBook | None = None
    vision: bool = False
    plots_gate: bool = True
    max_plots: int = 4
    tuning_history: str = ""
    sandbox_options: dict[str, Any] = field(default_factory=dict)
    step: Step = "all"
    proposed: Proposed | None = None  # the think step's output, for run and judge
    ran: Ran | None = None  # the run step's output, for judge
    blocking: bool = False  # judge: the stage's decision waits for it (its run's metric could be the best)

    @property
    def holds_resources(self) -> bool:
        return self.step in ("all", "run")

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult | StepResult:
        started = time.time()
        register(self.run_dir)  # on a worker too: a proposal from the journal may name blobs of the run
        counter = _Counting(self.llm.transport) if self.llm is not None else None
        llm = (
            LLM(counter, max_reasks=self.llm.max_reasks)
            if self.llm is not None and counter is not None
            else None
        )
        try:
            if self.step == "think":
                proposed = self._think(llm)
                return StepResult(
                    step="think",
                    outcome=proposed,
                    cost_usd=counter.dollars if counter else 0.0,
                    started_at=started,
                    finished_at=time.time(),
                )
            if self.step == "run":
                assert self.proposed is not None
                return StepResult(
                    step="run",
                    outcome=self._run(gpu_ids, self.proposed),
                    started_at=started,
                    finished_at=time.time(),
                )
            proposed = self.proposed if self.step == "judge" else self._think(llm)
            assert proposed is not None
            ran = (
                self.ran
                if self.step == "judge"
                else (None if proposed.proposal_error else self._run(gpu_ids, proposed))
            )
            result = self._judge(llm, proposed, ran)
        except BudgetExceeded as e:
            # No result: the dispatcher stops the run cleanly and the node re-runs on resume.
            return AttemptResult(status="buggy", refusal=BudgetRefusal(budget="dollars", message=str(e)))
        calls = (counter.calls if counter else 0) + (
            self.proposed.llm_calls if self.step == "judge" and self.proposed else 0
        )
        assert isinstance(result.outcome, OperatorOutcome)
        outcome = result.outcome.model_copy(update={"llm_calls": calls})
        return result.model_copy(
            update=dict(
                outcome=outcome,
                started_at=started,
                finished_at=time.time(),
                cost_usd=counter.dollars if counter else 0.0,
            )
        )

    # -- steps ----------------------------------------------------------------------------------
    def _think(self, llm: LLM | None) -> Proposed:
        """The node's plan and code: one LLM call, or the known code of a re-run."""
        if self.operator in RERUN_OPERATORS or llm is None:
            return Proposed(code=self.parent_code, plan=self.plan)
        try:
            proposal = llm.complete(
                [Message.system(SYSTEM), Message.user(self.prompt)],
                role="code",
                output_type=proposal_type(self.operator, self.parent_code, self.node_id, self.claims),
                node_id=self.node_id,
                stage=self.stage,
                idea=self.idea,
                attempt=self.attempt,
            )
        except BudgetExceeded:
            raise
        except LLMError as e:
            return Proposed(proposal_error=str(e)[:1000], llm_calls=1, exhausted=LISTED_AS_TRIED in str(e))
        accepted = accept(proposal, self.parent_code)
        return Proposed(
            code=accepted.code,
            plan=proposal.plan,
            plot_code=accepted.plot_code or self.parent_plot_code,
            code_change=accepted.change,
            diff_error=accepted.diff_error,  # type: ignore[arg-type]
            hyperparameters=proposal.hyperparameters or {},
            ablation=proposal.ablation or "",
            llm_calls=1,
        )

    def _run(self, gpu_ids: Sequence[int], proposed: Proposed) -> Ran:
        """The experiment, Silva's parser and the plot script in a fresh sandboxed workspace."""
        ws = fresh_workspace(self.run_dir, self.node_id, self.attempt)
        box = get_provider(self.sandbox, **self.sandbox_options).open(ws, gpu_ids=gpu_ids)
        ev = Evaluation()
        try:
            files = {EXPERIMENT: proposed.code.encode(), PARAMS_FILE: self._params(), **self._data_files()}
            if proposed.plot_code:
                files[PLOT] = proposed.plot_code.encode()
            res = box.exec([self.python, EXPERIMENT], limits=self.limits, files=files)
            ev.metrics, ev.results, problem = read_metrics(box, self.python, self.metrics)
            run_problem = failure_reason(res, self.limits) or problem
            plots: list[str] = []
            plot_problem = ""
            if not run_problem and proposed.plot_code and self.operator not in RERUN_OPERATORS:
                pres = box.exec([self.python, PLOT], limits=self.plot_limits)
                plots = new_pngs(res.files, pres, self.max_plots)
                why = failure_reason(pres, self.plot_limits)
                if why or not plots:
                    plot_problem = f"plot.py failed: {why}" if why else "plot.py wrote no PNG figure"
                _, too_big = png_bytes(box, plots)
                plot_problem = plot_problem or too_big
        finally:
            box.close()
        return Ran(
            workspace=str(ws.relative_to(self.run_dir)),
            execution=summarize(res),
            metrics=ev.metrics,
            results_notes=ev.results.notes if ev.results else "",
            result_artifacts=list(ev.results.artifacts) if ev.results else [],
            plots=plots,
            run_problem=run_problem,
            plot_problem=plot_problem,
        )

    def _judge(self, llm: LLM | None, proposed: Proposed, ran: Ran | None) -> AttemptResult:
        """The LLM judgement and vision critique, then the documented status rules."""
        ev = Evaluation(proposal_error=proposed.proposal_error)
        if ran is not None:
            ev.metrics, ev.run_problem, ev.plots, ev.plot_problem = (
                ran.metrics,
                ran.run_problem,
                ran.plots,
                ran.plot_problem,
            )
            ev.results = ResultsFile(
                metrics={m.name: m.value for m in ran.metrics},
                notes=ran.results_notes,
                artifacts=ran.result_artifacts,
            )
            if llm is not None and self.operator not in RERUN_OPERATORS:
                judge(
                    llm,
                    ev,
                    node_id=self.node_id,
                    stage=self.stage,
                    idea=self.idea,
                    attempt=self.attempt,
                    plan=proposed.plan,
                    code=proposed.code,
                    res=ran.execution,
                    tuning_history=self.tuning_history,
                    blocking=self.blocking,
                )
                images, _ = png_bytes(HostWorkspace(self.run_dir / ran.workspace), ran.plots)
                if images and self.vision and not (ev.judgement is not None and ev.judgement.is_buggy):
                    critique(
                        llm,
                        ev,
                        images,
                        node_id=self.node_id,
                        stage=self.stage,
                        idea=self.idea,
                        attempt=self.attempt,
                        plan=proposed.plan,
                        blocking=self.blocking,
                    )
        status, reason, rule = ev.decide(self.plots_gate)
        ws = self.run_dir / ran.workspace if ran is not None else None
        rel = Path(ran.workspace) if ran is not None else Path()
        keep = [EXPERIMENT, PLOT, RESULTS_FILE, *ev.plots, *(ran.result_artifacts if ran else [])]
        outcome = OperatorOutcome(
            operator=self.operator,
            split=self.split,
            plot_code=proposed.plot_code,  # type: ignore[arg-type]
            code_change=proposed.code_change,
            diff_error=proposed.diff_error,
            hyperparameters=proposed.hyperparameters,
            ablation=proposed.ablation,
            exhausted=proposed.exhausted,
            status_rule=rule,
            judgement=ev.judgement,
            judgement_error=ev.judgement_error,
            plot_critique=ev.critique,
            critique_error=ev.critique_error,
            plots=[str(rel / p) for p in ev.plots],
            results_notes=ran.results_notes if ran else "",
        )
        return AttemptResult(
            status=status,
            reason=reason,
            metrics=ev.metrics,
            execution=ran.execution if ran is not None else ExecSummary(),
            artifacts=kept_artifacts(ws, rel, keep) if ws is not None else [],
            workspace=str(rel) if ran is not None else "",
            code=proposed.code or None,
            plan=proposed.plan or None,
            outcome=outcome,
        )

    def _params(self) -> bytes:
        return params_payload(  # `split` is the held-out switch
            self.params,
            seed=self.seed,
            node_id=self.node_id,
            stage=self.stage,
            attempt=self.attempt,
            split=self.split,
        )

    def _data_files(self) -> dict[str, bytes]:
        return {name: path.read_bytes() for name, path in self.data.items()}
