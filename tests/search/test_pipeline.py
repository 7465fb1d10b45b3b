"""Pipelined LLM nodes (think, run, judge): only the run step holds the node's CPUs/GPUs, a
driver killed in any step resumes from the node's last finished step and pays no completed LLM
call twice, and the pipeline changes when work happens, not what the search grows."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from engine import events as ev
from engine.blobs import is_ref, raw
from engine.config import Resources
from engine.executor import Handle, InProcessExecutor, Job, JobDone, step_of
from engine.journal import Journal
from engine.llm.ledger import LEDGER_FILE, read_records
from engine.llm.prompt_budget import PromptBudget
from engine.node import AttemptResult, ExecSummary, MetricValue, Node, StepResult
from search.agentic.operators.claims import ClaimBook
from search.agentic.operators.frozen import PROMPTS_DIR, Asked
from search.agentic.operators.job import Ask, JudgeJob, Proposed, Ran, ThinkJob
from search.agentic.strategy import AgenticSearch
from search.idea import load_idea
from silva import lifecycle
from tests.search.agentic_helpers import agentic_config, llm_nodes, providers, responder

SMALL = {
    "preliminary": {"max_nodes": 2},
    "hyperparameter": {"max_nodes": 2},
    "agenda": {"max_nodes": 2},
    "ablation": {"max_nodes": 1},
}


class Killed(BaseException):
    """What SIGKILL does to the driver, in-process: the loop stops and journals nothing."""


class Recording:
    """The in-process executor, recording what each job was submitted with; optionally the driver
    'dies' right after submitting the first job of `kill_at`."""

    def __init__(self, workers: int, kill_at: str | None = None) -> None:
        self.inner = InProcessExecutor(workers)
        self.kill_at, self.dying = kill_at, False
        self.submitted: list[tuple[str, str, Resources]] = []

    def submit(self, job: Job, resources: Resources) -> Handle:
        self.submitted.append((job.node_id, step_of(job), resources))
        if step_of(job) == self.kill_at and self.kill_at is not None:
            self.dying, self.kill_at = True, None
        return self.inner.submit(job, resources)

    def wait(self, handles: Sequence[Handle], timeout: float) -> JobDone | None:
        if self.dying:
            raise Killed
        return self.inner.wait(handles, timeout)

    def cancel(self, handle: Handle) -> None:
        self.inner.cancel(handle)

    def shutdown(self) -> None:
        self.inner.shutdown()


def ask_of(job: Job) -> Ask:
    assert isinstance(job, ThinkJob), job
    return job.ask


def judging(job: Job) -> JudgeJob:
    assert isinstance(job, JudgeJob), job
    return job


def config(tmp: Path, **overrides: Any) -> Any:
    return agentic_config(
        tmp,
        **{
            "replicates": 1,
            "stages": SMALL,
            "resources": {"default": {"num_cpus": 1, "num_gpus": 1}},
            **overrides,
        },
    )


@pytest.mark.e2e
def test_only_the_run_step_holds_the_gpu_and_no_llm_call_happens_during_it(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    run_dir, journal = lifecycle.create_run(cfg)
    executor = Recording(8)
    outcome = lifecycle.execute(cfg, journal, executor=executor, providers=providers(responder(plots=False)))
    assert outcome.status == "finished", outcome.message
    steps = {(node, step): res for node, step, res in executor.submitted}
    assert {s for _, s in steps} >= {"think", "run", "judge"}
    j = Journal.open(run_dir, read_only=True)
    for (node, step), res in steps.items():
        kind = j.nodes[node].kind
        if step in ("think", "judge") or kind == "selection":  # jobs that only wait on the LLM
            assert res.num_gpus == 0 and res.num_cpus == 0, (node, step, res)
        elif step in ("run", "all"):  # the experiment; "all" only for re-runs, which ask no LLM
            assert res.num_gpus == 1, (node, step, res)
            assert step == "run" or kind == "replication"
    held: dict[str, tuple[float, float]] = {}
    for e in j.log.events:
        if isinstance(e, ev.AttemptStarted) and e.step == "run":
            held[e.node_id] = (e.ts, float("inf"))
        elif isinstance(e, ev.StepFinished) and e.step == "run":
            held[e.node_id] = (held[e.node_id][0], e.ts)
    # Every run step ended, but those of speculative nodes discarded while they ran (cancelled).
    assert held and all(
        end < float("inf") for node, (_, end) in held.items() if j.nodes[node].status.value != "discarded"
    )
    # A proposal's code is a payload: a blob reference in the event, the text on the node.
    think = next(
        e
        for e in j.log.events
        if isinstance(e, ev.StepFinished) and e.step == "think" and len(j.nodes[e.node_id].code) >= 512
    )
    assert think.result.outcome is not None and is_ref(raw(think.result.outcome, "code"))
    assert j.nodes[think.node_id].steps["think"].code == j.nodes[think.node_id].code  # type: ignore[union-attr]
    calls = [r for r in read_records(run_dir / LEDGER_FILE) if r.node_id in held]
    assert calls
    for r in calls:  # the node's own LLM calls fall outside the span its GPU was held
        start, end = held[r.node_id]  # type: ignore[index]
        assert r.ts <= start or r.ts - r.latency_s >= end, (r.node_id, r.role)


@pytest.mark.e2e
def test_pipelined_and_single_job_runs_grow_the_same_tree(tmp_path: Path) -> None:
    """Without look-ahead the pipeline proposes exactly when the single-job loop does."""
    trees = []
    for pipeline in (True, False):
        cfg = config(
            tmp_path / str(pipeline),
            search={"pipeline": pipeline},
            executor={"kind": "inprocess", "max_in_flight": 1, "lookahead": 0},
        )  # deterministic order
        run_dir, journal = lifecycle.create_run(cfg)
        outcome = lifecycle.execute(cfg, journal, providers=providers(responder(plots=False)))
        assert outcome.status == "finished", outcome.message
        j = Journal.open(run_dir, read_only=True)
        trees.append(
            (
                sorted((n.stage, n.kind, n.parent_id or "", n.status.value) for n in llm_nodes(j)),
                {stage: (j.nodes[e.node_id or ""].kind, e.value) for (_, stage), e in j.stage_best.items()},
            )
        )
    assert trees[0] == trees[1]


@pytest.mark.e2e
@pytest.mark.parametrize("step", ["think", "run", "judge"])
def test_a_driver_killed_in_any_step_resumes_and_pays_nothing_twice(tmp_path: Path, step: str) -> None:
    cfg = config(tmp_path)
    fn = responder(plots=False)
    run_dir, journal = lifecycle.create_run(cfg)
    with pytest.raises(Killed):
        lifecycle.execute(cfg, journal, executor=Recording(8, kill_at=step), providers=providers(fn))
    before = Journal.open(run_dir, read_only=True)
    done = {n.id: n.model_dump() for n in before if n.is_finished}
    cut = {n.id: dict(n.steps) for n in before if not n.is_finished}
    assert any(cut.values()) or step == "think"  # a killed later step leaves its earlier steps journaled

    cfg2, journal2 = lifecycle.open_run(run_dir)
    outcome = lifecycle.execute(cfg2, journal2, providers=providers(fn))
    assert outcome.status == "finished" and outcome.message == "all four stages complete"
    after = Journal.open(run_dir, read_only=True)
    for node_id, dumped in done.items():
        assert after.nodes[node_id].model_dump() == dumped  # finished nodes are never re-run
    finished_steps = Counter((e.node_id, e.step) for e in after.log.read(ev.StepFinished))
    assert max(finished_steps.values()) == 1  # no step of a node is done twice
    records = read_records(run_dir / LEDGER_FILE)
    assert not any(r.hedge for r in records)  # hedging is off by default: no call is sent twice
    paid = Counter(r.key for r in records if not r.cache_hit and r.key)
    assert paid and max(paid.values()) == 1  # no completed LLM call is paid twice
    assert all(n.is_finished for n in llm_nodes(after))


# Building a job only sizes its prompt: an LLM that is never called, with the default context.
NO_CALLS = SimpleNamespace(
    budget=lambda role: PromptBudget(role=role, context_tokens=128_000, max_tokens=4096)
)


def test_a_rebuilt_think_asks_exactly_what_its_first_build_asked(tmp_path: Path) -> None:
    """A think rebuilt later (a lost worker, a resumed run) would see a newer journal: here a
    sibling that claimed a setting meanwhile. It asks what was kept, so the cached answer is hit."""
    cfg = config(tmp_path)
    run_dir, journal = lifecycle.create_run(cfg)
    idea = load_idea(cfg.idea)
    root = journal.add_node(Node(stage="preliminary", kind="draft", idea=idea.name, code="print(1)\n"))
    a, b = (
        journal.add_node(
            Node(parent_id=root.id, stage="hyperparameter", kind="hyperparameter", idea=idea.name)
        )
        for _ in range(2)
    )
    first = ask_of(AgenticSearch(cfg, journal, idea, NO_CALLS, vision=False).job_for(a, 1))  # type: ignore[arg-type]
    assert "Already tried settings (do not repeat): none yet" in first.prompt
    assert "this is number 1 of 2" in first.prompt  # b is being written beside it
    ClaimBook(run_dir, idea.name, "hyperparameter", "hyperparameter").claim('{"lr": 0.1}', b.id)

    again = ask_of(
        AgenticSearch(cfg, Journal.open(run_dir, read_only=True), idea, NO_CALLS, vision=False).job_for(a, 2)  # type: ignore[arg-type]
    )
    assert again.prompt == first.prompt
    assert again.claims is not None and again.claims.listed == frozenset()
    kept = Asked.model_validate_json((run_dir / PROMPTS_DIR / f"{a.id}.think.json").read_text())
    assert kept.prompt == first.prompt
    # A node built now sees the claim: the kept prompt was not simply rebuilt.
    c = journal.add_node(
        Node(parent_id=root.id, stage="hyperparameter", kind="hyperparameter", idea=idea.name)
    )
    fresh = ask_of(AgenticSearch(cfg, journal, idea, NO_CALLS, vision=False).job_for(c, 1))  # type: ignore[arg-type]
    assert 'Already tried settings (do not repeat): {"lr": 0.1}' in fresh.prompt
    assert "this is number 2 of 2" in fresh.prompt  # a has no claim yet: it is still being written


@pytest.mark.e2e
def test_parallel_proposals_take_distinct_settings_without_paying_re_asks(tmp_path: Path) -> None:
    stages = {**SMALL, "hyperparameter": {"max_nodes": 4}}
    cfg = config(
        tmp_path,
        stages=stages,
        executor={"kind": "inprocess", "max_in_flight": 4, "lookahead": 0},
        search={"speculate": False},
    )
    run_dir, journal = lifecycle.create_run(cfg)
    outcome = lifecycle.execute(cfg, journal, providers=providers(responder(plots=False)))
    assert outcome.status == "finished", outcome.message
    j = Journal.open(run_dir, read_only=True)
    tuned = [n for n in llm_nodes(j) if n.kind == "hyperparameter"]
    places = [
        Asked.model_validate_json((run_dir / PROMPTS_DIR / f"{n.id}.think.json").read_text()).prompt
        for n in tuned
    ]
    assert any("this is number 2 of" in p for p in places)  # several were written at once
    code_calls = Counter(r.node_id for r in read_records(run_dir / LEDGER_FILE) if r.role == "code")
    assert [code_calls[n.id] for n in tuned] == [1] * len(tuned)  # none raced for a setting
    # Only a tuning run's judgement is shown the tuning so far, and that view is kept too.
    assert {p.name.split(".")[0] for p in (run_dir / PROMPTS_DIR).glob("*.judge.json")} == {
        n.id for n in tuned
    }


@pytest.mark.parametrize("pipeline", [True, False])
def test_an_early_end_discards_proposals_whose_experiment_has_not_started(
    tmp_path: Path, pipeline: bool
) -> None:
    """Stage 1 ends at its first good node; look-ahead proposals still thinking or waiting for a
    slot are discarded (their calls cancelled), not awaited. Experiments under way are awaited."""
    cfg = config(tmp_path, search={"pipeline": pipeline})
    run_dir, journal = lifecycle.create_run(cfg)
    idea = load_idea(cfg.idea)
    good, thinking, queued, running, judging, unstarted = (
        journal.add_node(Node(stage="preliminary", kind="draft", idea=idea.name)) for _ in range(6)
    )
    now = time.time()

    def step(node: Node, name: str, outcome: Any) -> None:
        journal.step_finished(
            node.id, 1, StepResult(step=name, started_at=now, finished_at=now, outcome=outcome)
        )

    for n in (good, thinking, queued, running, judging):
        journal.attempt_started(n.id, 1, "think" if pipeline else "")
    journal.attempt_finished(good.id, 1, AttemptResult(status="good", started_at=now, finished_at=now))
    if pipeline:
        for n in (queued, running, judging):
            step(n, "think", Proposed(code="print(1)\n"))
        for n in (running, judging):
            journal.attempt_started(n.id, 1, "run")
        step(judging, "run", Ran(workspace="w", execution=ExecSummary(exit_code=0)))
    search = AgenticSearch(cfg, journal, idea, NO_CALLS, vision=False)  # type: ignore[arg-type]
    assert search.search_done(journal, "preliminary", None) == f"first good node {good.id}"
    # Pipeline off, a running node is one job (think, run and judge): it is awaited.
    moot = {thinking.id, queued.id, unstarted.id} if pipeline else {unstarted.id}
    assert {n.id for n in journal if n.status.value == "discarded"} == moot
    assert all("the stage's search ended (first good node" in journal.nodes[i].reason for i in moot)


def test_a_judgement_the_decision_waits_for_is_a_blocking_call(tmp_path: Path) -> None:
    """A node whose run reported a metric no finished node beats could be the stage's best, so
    the decision waits for its judgement: the job asks it as a blocking call (sent twice at once)."""
    cfg = config(tmp_path)
    run_dir, journal = lifecycle.create_run(cfg)
    idea = load_idea(cfg.idea)
    search = AgenticSearch(cfg, journal, idea, NO_CALLS, vision=False)  # type: ignore[arg-type]
    now = time.time()

    def ran(value: float | None, problem: str = "") -> Node:
        n = journal.add_node(Node(stage="preliminary", kind="draft", idea=idea.name))
        journal.attempt_started(n.id, 1, "think")
        for name, outcome in (
            ("think", Proposed(code="print(1)\n")),
            (
                "run",
                Ran(
                    workspace="w",
                    execution=ExecSummary(exit_code=0),
                    run_problem=problem,
                    metrics=[]
                    if value is None
                    else [MetricValue(name="val_accuracy", value=value, direction="maximize")],
                ),
            ),
        ):
            journal.step_finished(
                n.id, 1, StepResult(step=name, started_at=now, finished_at=now, outcome=outcome)
            )
        return n

    first = ran(0.5)
    assert judging(search.job_for(first, 1)).review.blocking  # nothing finished yet: it could be the best
    journal.attempt_finished(
        first.id,
        1,
        AttemptResult(
            status="good",
            started_at=now,
            finished_at=now,
            metrics=[MetricValue(name="val_accuracy", value=0.5, direction="maximize")],
        ),
    )
    better, tie, worse, failed = ran(0.6), ran(0.5), ran(0.4), ran(None, problem="exit code 1")
    assert [judging(search.job_for(n, 1)).review.blocking for n in (better, tie, worse, failed)] == [
        True,
        True,
        False,
        False,
    ]
