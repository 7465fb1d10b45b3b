"""One operator attempt on a worker, as three steps: think (LLM plan and code), run (sandboxed
experiment, parser, plots), judge (LLM judgement and critique, then the status rules).

draft / debug / improve / hyperparameter / ablation / crossover ask the LLM for a plan and code
(one call), run it, and ask for one judgement and, when there are plots and a vision model, one
critique: at most three LLM calls plus bounded re-asks. replication, heldout and template re-run
known code (another seed or split, a template's own experiment, search/template/seed.py) and use
the rules only.

A pipelined attempt is three jobs, `ThinkJob`, `RunJob` and `JudgeJob`, and only `RunJob` holds
the node's CPUs/GPUs: the LLM never keeps an accelerator waiting. `CycleJob` runs the three steps
in one job (pipeline off, and re-runs). Each step's output is journaled (`Proposed`, `Ran`), so a
resumed attempt goes on from its last finished step (docs/architecture.md, "The path of one node").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from engine.attempt import failure_reason, fresh_workspace, summarize
from engine.blobs import Text, lazy_text, register
from engine.contract import PARAMS_FILE, RESULTS_FILE, ResultsFile, params_payload
from engine.llm import LLM, BudgetExceeded, LLMError, Message
from engine.llm.types import Completion, Embeddings, EmbedRequest, LLMRequest
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

Step = Literal["all", "think", "run", "judge"]  # as journaled in `attempt_started`


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
    result_artifacts: list[str] = Field(default_factory=list)  # workspace-relative, as results.json named
    plots: list[str] = Field(default_factory=list)  # workspace-relative PNGs
    run_problem: str = ""
    plot_problem: str = ""


@dataclass
class Attempt:
    """What every step of one node attempt shares: which node, where it runs, under what limits."""

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
    sandbox_options: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Path] = field(default_factory=dict)  # workspace path -> host file
    params: dict[str, Any] = field(default_factory=dict)  # silva_params.json "params" (a template's)
    split: str = "search"
    vision: bool = False
    plots_gate: bool = True
    max_plots: int = 4


@dataclass
class Ask:
    """The think step's input, built from the journal on the driver."""

    prompt: str = ""  # the code proposal's user turn
    plan: str = ""  # known plan of a re-run
    parent_code: str = ""
    parent_plot_code: str = ""
    claims: ClaimBook | None = None


@dataclass
class Review:
    """The judge step's input besides the run."""

    tuning_history: str = ""  # a tuning stage's settings and results so far
    blocking: bool = False  # the stage's decision waits for it (its run's metric could be the best)


# -- the three steps ------------------------------------------------------------------------------
def think(a: Attempt, ask: Ask, llm: LLM | None) -> Proposed:
    """The node's plan and code: one LLM call, or the known code of a re-run."""
    if a.operator in RERUN_OPERATORS or llm is None:
        return Proposed(code=ask.parent_code, plan=ask.plan)
    try:
        proposal = llm.complete(
            [Message.system(SYSTEM), Message.user(ask.prompt)],
            role="code",
            output_type=proposal_type(a.operator, ask.parent_code, a.node_id, ask.claims),
            node_id=a.node_id,
            stage=a.stage,
            idea=a.idea,
            attempt=a.attempt,
            context={"operator": a.operator, "node": a.node_id, "stage": a.stage, "idea": a.idea},
        )
    except BudgetExceeded:
        raise
    except LLMError as e:
        return Proposed(proposal_error=str(e)[:1000], llm_calls=1, exhausted=LISTED_AS_TRIED in str(e))
    accepted = accept(proposal, ask.parent_code)
    return Proposed(
        code=accepted.code,
        plan=proposal.plan,
        plot_code=accepted.plot_code or ask.parent_plot_code,
        code_change=accepted.change,
        diff_error=accepted.diff_error,
        hyperparameters=proposal.setting(),
        ablation=proposal.ablated(),
        llm_calls=1,
    )


def run_experiment(a: Attempt, proposed: Proposed, gpu_ids: Sequence[int]) -> Ran:
    """The experiment, Silva's parser and the plot script in a fresh sandboxed workspace."""
    ws = fresh_workspace(a.run_dir, a.node_id, a.attempt)
    box = get_provider(a.sandbox, **a.sandbox_options).open(ws, gpu_ids=gpu_ids)
    ev = Evaluation()
    try:
        files = {EXPERIMENT: proposed.code.encode(), PARAMS_FILE: _params(a), **_data_files(a)}
        if proposed.plot_code:
            files[PLOT] = proposed.plot_code.encode()
        res = box.exec([a.python, EXPERIMENT], limits=a.limits, files=files)
        ev.metrics, ev.results, problem = read_metrics(box, a.python, a.metrics)
        run_problem = failure_reason(res, a.limits) or problem
        plots: list[str] = []
        plot_problem = ""
        if not run_problem and proposed.plot_code and a.operator not in RERUN_OPERATORS:
            pres = box.exec([a.python, PLOT], limits=a.plot_limits)
            plots = new_pngs(res.files, pres, a.max_plots)
            why = failure_reason(pres, a.plot_limits)
            if why or not plots:
                plot_problem = f"plot.py failed: {why}" if why else "plot.py wrote no PNG figure"
            _, too_big = png_bytes(box, plots)
            plot_problem = plot_problem or too_big
    finally:
        box.close()
    return Ran(
        workspace=str(ws.relative_to(a.run_dir)),
        execution=summarize(res),
        metrics=ev.metrics,
        results_notes=ev.results.notes if ev.results else "",
        result_artifacts=list(ev.results.artifacts) if ev.results else [],
        plots=plots,
        run_problem=run_problem,
        plot_problem=plot_problem,
    )


def judge_run(
    a: Attempt, review: Review, llm: LLM | None, proposed: Proposed, ran: Ran | None
) -> AttemptResult:
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
        if llm is not None and a.operator not in RERUN_OPERATORS:
            _ask_judge_and_critique(a, review, llm, proposed, ran, ev)
    status, reason, rule = ev.decide(a.plots_gate)
    rel = Path(ran.workspace) if ran is not None else Path()
    keep = [EXPERIMENT, PLOT, RESULTS_FILE, *ev.plots, *(ran.result_artifacts if ran else [])]
    outcome = OperatorOutcome(
        operator=a.operator,
        split=a.split,
        plot_code=proposed.plot_code,
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
        artifacts=kept_artifacts(a.run_dir / rel, rel, keep) if ran is not None else [],
        workspace=str(rel) if ran is not None else "",
        code=proposed.code or None,
        plan=proposed.plan or None,
        outcome=outcome,
    )


def _ask_judge_and_critique(
    a: Attempt, review: Review, llm: LLM, proposed: Proposed, ran: Ran, ev: Evaluation
) -> None:
    judge(
        llm,
        ev,
        node_id=a.node_id,
        stage=a.stage,
        idea=a.idea,
        attempt=a.attempt,
        plan=proposed.plan,
        code=proposed.code,
        res=ran.execution,
        tuning_history=review.tuning_history,
        blocking=review.blocking,
    )
    images, _ = png_bytes(HostWorkspace(a.run_dir / ran.workspace), ran.plots)
    if images and a.vision and not (ev.judgement is not None and ev.judgement.is_buggy):
        critique(
            llm,
            ev,
            images,
            node_id=a.node_id,
            stage=a.stage,
            idea=a.idea,
            attempt=a.attempt,
            plan=proposed.plan,
            blocking=review.blocking,
        )


# -- the jobs: one step each, or the whole cycle ------------------------------------------------
class _OfAttempt:
    """The `Job` protocol's node_id and attempt, from the job's `Attempt`."""

    a: Attempt

    @property
    def node_id(self) -> str:
        return self.a.node_id

    @property
    def attempt(self) -> int:
        return self.a.attempt


@dataclass
class ThinkJob(_OfAttempt):
    """Step 1: the LLM writes the node's plan and code. Holds no CPUs or GPUs."""

    a: Attempt
    llm: LLM
    ask: Ask
    step: ClassVar[Step] = "think"
    holds_resources: ClassVar[bool] = False

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult | StepResult:
        started, metered = time.time(), _Metered(self.a.run_dir, self.llm)
        try:
            proposed = think(self.a, self.ask, metered.llm)
        except BudgetExceeded as e:
            return _refused(e)
        return StepResult(
            step="think",
            outcome=proposed,
            cost_usd=metered.dollars,
            started_at=started,
            finished_at=time.time(),
        )


@dataclass
class RunJob(_OfAttempt):
    """Step 2: the experiment in the sandbox, on the node's CPUs/GPUs. No LLM."""

    a: Attempt
    proposed: Proposed
    step: ClassVar[Step] = "run"
    holds_resources: ClassVar[bool] = True

    def run(self, gpu_ids: Sequence[int]) -> StepResult:
        started = time.time()
        register(self.a.run_dir)
        ran = run_experiment(self.a, self.proposed, gpu_ids)
        return StepResult(step="run", outcome=ran, started_at=started, finished_at=time.time())


@dataclass
class JudgeJob(_OfAttempt):
    """Step 3: the LLM judges the run; the status rules give the node its one result. No CPUs or GPUs."""

    a: Attempt
    llm: LLM
    proposed: Proposed
    ran: Ran | None  # None when the proposal failed: nothing ran
    review: Review
    step: ClassVar[Step] = "judge"
    holds_resources: ClassVar[bool] = False

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        started, metered = time.time(), _Metered(self.a.run_dir, self.llm)
        try:
            result = judge_run(self.a, self.review, metered.llm, self.proposed, self.ran)
        except BudgetExceeded as e:
            return _refused(e)
        return _stamped(result, started, metered, calls=metered.calls + self.proposed.llm_calls)


@dataclass
class CycleJob(_OfAttempt):
    """Think, run and judge in one job holding the node's resources: the pipeline off, or a re-run
    of known code (`llm` None)."""

    a: Attempt
    llm: LLM | None
    ask: Ask
    review: Review = field(default_factory=Review)
    step: ClassVar[Step] = "all"
    holds_resources: ClassVar[bool] = True

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        started, metered = time.time(), _Metered(self.a.run_dir, self.llm)
        try:
            proposed = think(self.a, self.ask, metered.llm)
            ran = None if proposed.proposal_error else run_experiment(self.a, proposed, gpu_ids)
            result = judge_run(self.a, self.review, metered.llm, proposed, ran)
        except BudgetExceeded as e:
            return _refused(e)
        return _stamped(result, started, metered, calls=metered.calls)


# -- helpers ------------------------------------------------------------------------------------
class _Counting:
    """Transport wrapper: the dollars and calls of this job (the client returns parsed models)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls, self.dollars = inner, 0, 0.0

    def call(self, request: LLMRequest) -> Completion:
        completion: Completion = self.inner.call(request)
        self.calls += 1
        self.dollars += completion.dollars
        return completion

    def embed(self, request: EmbedRequest) -> Embeddings:
        embeddings: Embeddings = self.inner.embed(request)
        self.calls += 1
        self.dollars += embeddings.dollars
        return embeddings

    def ledger_note(self, request: LLMRequest, error: str) -> None:
        self.inner.ledger_note(request, error)  # a ledger line, not a call: nothing sent or paid


class _Metered:
    """The job's LLM client, counting this job's calls and dollars."""

    def __init__(self, run_dir: Path, llm: LLM | None) -> None:
        register(run_dir)  # on a worker too: a proposal from the journal may name blobs of the run
        self.counter = _Counting(llm.transport) if llm is not None else None
        self.llm = (
            LLM(self.counter, max_reasks=llm.max_reasks, budgets=llm.budgets)
            if llm is not None and self.counter is not None
            else None
        )

    @property
    def calls(self) -> int:
        return self.counter.calls if self.counter else 0

    @property
    def dollars(self) -> float:
        return self.counter.dollars if self.counter else 0.0


def _refused(e: BudgetExceeded) -> AttemptResult:
    # No result: the dispatcher stops the run cleanly and the node re-runs on resume.
    return AttemptResult(status="buggy", refusal=BudgetRefusal(budget="dollars", message=str(e)))


def _stamped(result: AttemptResult, started: float, metered: _Metered, *, calls: int) -> AttemptResult:
    assert isinstance(result.outcome, OperatorOutcome)
    return result.model_copy(
        update=dict(
            outcome=result.outcome.model_copy(update={"llm_calls": calls}),
            started_at=started,
            finished_at=time.time(),
            cost_usd=metered.dollars,
        )
    )


def _params(a: Attempt) -> bytes:
    return params_payload(  # `split` is the held-out switch
        a.params, seed=a.seed, node_id=a.node_id, stage=a.stage, attempt=a.attempt, split=a.split
    )


def _data_files(a: Attempt) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in a.data.items()}
