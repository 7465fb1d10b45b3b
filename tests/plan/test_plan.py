"""`silva plan`: the real driver on a simulated executor in virtual time (docs/plan.md)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine.config import Budgets, Resources
from engine.dispatch import BudgetStop
from engine.journal import Journal
from engine.node import AttemptResult, ExecSummary, MetricValue, Node, StepResult
from silva import lifecycle
from silva.cli.main import main
from silva.config import load_config
from silva.plan import Lognormal, PlanExecutor, PlanSettings, Source, instant_scripted
from silva.plan.source import _to_the_right
from tests.helpers import make_config, make_template

# What a plan may differ from the real run by (docs/plan.md, "How close"): durations are drawn
# from the run's own, in another order, and the real run adds the driver's and processes' time.
WALL_ERROR = 0.5
NODES_ERROR = 0.2


def small_config(tmp: Path, **overrides: Any) -> Path:
    return make_config(
        tmp,
        make_template(tmp / "tpl", fixed={"sleep": 0.5}),
        replicates=1,
        stages={
            "preliminary": {"max_nodes": 1},
            "hyperparameter": {"max_nodes": 4},
            "agenda": {"max_nodes": 2},
            "ablation": {"max_nodes": 1},
        },
        **overrides,
    )


def plan_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["plan", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_plan_is_the_same_for_the_same_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = str(small_config(tmp_path, budgets={"wall_clock_s": None}))
    one, two = (plan_json(capsys, cfg, "--seed", "3", "--slots", "2") for _ in range(2))
    other = plan_json(capsys, cfg, "--seed", "4", "--slots", "2")
    for r in (one, two, other):
        for key in [k for k in r if k.startswith("driver_")]:
            del r[key]
    assert one == two and one["outcome"] == "finished" and one["nodes"] > 8
    assert other["wall_s"] != one["wall_s"]  # the seed draws the durations
    assert one["slots"] == 2 and 0 < one["utilization"] <= 1
    assert one["share_by_idea"] == {"default": 1.0}


@pytest.mark.e2e
def test_a_plan_agrees_with_the_real_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run the small config for real, plan it from that run's journal, compare."""
    path = small_config(tmp_path, writeup={"offline": True})
    cfg = load_config(path)
    run_dir, journal = lifecycle.create_run(cfg)
    outcome = lifecycle.execute(cfg, journal)
    assert outcome.status == "finished"
    real_nodes = len(journal.nodes)
    real_wall = journal.elapsed_s()
    real_papers = sum(1 for n in journal if n.kind == "paper" and n.status.value == "good")
    report = plan_json(capsys, str(path), "--from", str(run_dir))
    assert report["outcome"] == "finished" and report["source"] == str(run_dir)
    assert report["papers_written"] == real_papers == 1
    assert abs(report["nodes"] - real_nodes) <= NODES_ERROR * real_nodes, (report["nodes"], real_nodes)
    assert abs(report["wall_s"] - real_wall) <= WALL_ERROR * real_wall, (report["wall_s"], real_wall)


def test_the_wall_clock_budget_stops_a_plan_in_virtual_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Experiments of 20 minutes: a 1-hour budget stops the plan, which says so."""
    cfg = str(small_config(tmp_path, budgets={"wall_clock_s": 3600}))
    report = plan_json(capsys, cfg, "--experiment-s", "1200")
    assert report["outcome"] == "budget" and report["stopped_by"] == "wall_clock_s"
    assert report["wall_s"] == 3600


def test_bad_plan_inputs_exit_2_with_what_to_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = str(small_config(tmp_path))
    assert main(["plan", cfg, "--slots", "-4"]) == 2
    assert "--slots -4: a run needs at least one slot" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["plan", cfg, "--from", str(tmp_path / "empty")]) == 2
    assert "not a Silva run directory (no events.jsonl)" in capsys.readouterr().err
    # A run that used an LLM must bring its ledger: the LLM latencies and tokens come from it.
    llm = {
        "providers": {"offline": {"kind": "scripted"}},
        "models": {"m": {"provider": "offline", "model": "scripted"}},
        "roles": {"writeup": {"model": "m"}},
    }
    with_llm = str(small_config(tmp_path / "llm", llm=llm))
    run_dir, journal = lifecycle.create_run(load_config(Path(cfg)))
    journal.log.close()
    assert main(["plan", with_llm, "--from", str(run_dir)]) == 2
    assert f"--from {run_dir}: no llm_ledger.jsonl" in capsys.readouterr().err


def test_an_agentic_forest_is_planned_to_reviewed_papers_at_its_models_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two agentic ideas with the LLM writeup and review: no key is needed and no model is
    called; each think, judge, writeup and review is charged its role's tokens at the model's
    built-in price, and the plan is the same for the same seed."""
    from tests.plan.forests import forest

    path = forest(tmp_path, ideas=2, max_nodes=2, papers=True)
    one, two = (plan_json(capsys, str(path), "--seed", "1") for _ in range(2))
    assert one["outcome"] == "finished", one["message"]
    assert one["papers_written"] == one["papers_reviewed"] == 2
    assert one["llm_calls"]["code"] >= one["nodes_by_kind"]["draft"] and one["llm_calls"]["review"] == 12
    assert one["llm_dollars"] > 0 and one["dollars_per_paper"] == pytest.approx(
        one["llm_dollars"] / 2, abs=1e-3
    )
    assert {k: v for k, v in one.items() if not k.startswith("driver_")} == {
        k: v for k, v in two.items() if not k.startswith("driver_")
    }


@dataclass
class Sleep:
    """A job the plan gives its kind's duration (no LLM, no code)."""

    node_id: str
    attempt: int = 1

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        raise AssertionError("a plan runs no job")


def virtual(tmp: Path, settings: PlanSettings, source_journal: Journal | None = None) -> PlanExecutor:
    journal = Journal.open(tmp / "plan")
    for kind in ("short", "long"):
        journal.add_node(Node(id=kind, stage="s", kind=kind))
    ex = PlanExecutor(journal, Source(settings, source_journal), 0, Budgets(), {})
    ex.grown = len(journal.nodes)  # as the driver's last wait saw the tree: no round to poll again for
    return ex


def test_without_a_wait_the_virtual_clock_hands_out_only_jobs_already_ended(tmp_path: Path) -> None:
    """The driver's group commit asks for completions ready together with a zero timeout: a
    job that ends later must not move the clock (it moved to the last of the jobs in flight,
    and plans came out 43-100% longer than the runs they planned)."""
    fixed = {k: Lognormal(median_s=s, sigma=0) for k, s in (("short", 1.0), ("long", 5.0), ("default", 9))}
    ex = virtual(tmp_path, PlanSettings(durations=fixed))
    short, long = ex.submit(Sleep("short"), Resources()), ex.submit(Sleep("long"), Resources())
    first = ex.wait([short, long], 0.5)
    assert first is not None and first.handle == short and ex.now - ex.start == pytest.approx(1.0)
    assert ex.wait([long], 0) is None and ex.now - ex.start == pytest.approx(1.0)
    done = ex.wait([long], 0.5)
    assert done is not None and done.handle == long and ex.now - ex.start == pytest.approx(5.0)


def test_after_a_round_that_grew_the_tree_the_driver_polls_again_before_the_next_end(
    tmp_path: Path,
) -> None:
    """The driver proposes again after its poll timeout with nothing done; a round that created
    or discarded nodes may then give more (in a forest's run, a stage's speculative replicate
    came 0.5 s after its selection started; the replay made it at the next completion, 3 s
    later). After a round that changed nothing, the clock moves on to the next end."""
    fixed = {k: Lognormal(median_s=s, sigma=0) for k, s in (("short", 2.0), ("long", 5.0), ("default", 9))}
    ex = virtual(tmp_path, PlanSettings(durations=fixed))
    ex.grown = 0  # the last round created the two nodes
    short = ex.submit(Sleep("short"), Resources())
    assert ex.wait([short], 0.5) is None and ex.now - ex.start == pytest.approx(0.5)
    done = ex.wait([short], 0.5)  # nothing created since: on to the end
    assert done is not None and done.handle == short and ex.now - ex.start == pytest.approx(2.0)
    ex.journal.add_node(Node(id="new", stage="s", kind="short"))
    long = ex.submit(Sleep("long"), Resources())
    assert ex.wait([long], 0.5) is None and ex.now - ex.start == pytest.approx(2.5)
    ex.journal.discard("new", "its premise lost")
    assert ex.wait([long], 0.5) is None and ex.now - ex.start == pytest.approx(3.0)
    done = ex.wait([long], 0.5)
    assert done is not None and done.handle == long and ex.now - ex.start == pytest.approx(7.0)


def test_a_replayed_result_takes_its_twins_own_time_within_its_span(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replayed step ends when its twin's did, after the span the run's driver saw (9 s), and
    its result says it took its twin's own time (8 s): the look-ahead is measured on results'
    own times, and on the spans a forest's replay thought one node more ahead than its run."""
    from types import SimpleNamespace
    from typing import cast

    from search.agentic.operators.job import Attempt, Proposed, RunJob

    source_run = agentic_source(tmp_path, monkeypatch, [{"run": 9.0}])
    journal = Journal.open(tmp_path / "plan")
    journal.add_node(Node(id="p0", stage="ablation", kind="ablation"))
    ex = PlanExecutor(journal, Source(PlanSettings(), source_run, replay=True), 0, Budgets(), {})
    job = RunJob(a=cast(Attempt, SimpleNamespace(node_id="p0", attempt=1, metrics=[])), proposed=Proposed())
    ex.grown = len(journal.nodes)  # no round to poll again for
    done = ex.wait([ex.submit(job, Resources())], 0.5)
    assert done is not None and done.result is not None and ex.now - ex.start == pytest.approx(9.0)
    assert done.result.finished_at - done.result.started_at == pytest.approx(8.0)


def test_an_experiment_kind_the_source_run_never_made_takes_that_runs_experiment_times(
    tmp_path: Path,
) -> None:
    """A debug node in the plan of a run without bugs: the run's own experiment times, not the
    defaults' 20-minute median (one such draw ran a 2-minute run's plan into its 1-hour budget)."""
    run = Journal.open(tmp_path / "run")
    run.add_node(Node(id="d", stage="s", kind="draft"))
    run.attempt_started("d", 1, "")
    run.attempt_finished(
        "d", 1, AttemptResult(status="good", execution=ExecSummary(wall_s=3.0), started_at=1, finished_at=4)
    )
    source = Source(PlanSettings(), Journal.open(tmp_path / "run", read_only=True))
    rng = random.Random(0)
    assert source.duration("debug", rng) == 3.0 and source.buggy("debug", rng) is False
    assert source.duration("aggregation", rng) < 60  # a support kind keeps its own default


@pytest.mark.slow
def test_a_rolling_forest_is_planned_to_its_manuscripts_with_the_supply_rate_it_took(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ideation:` in the planned config: ideas are admitted as the slots need them (no model is
    called), each is written up and reviewed, the run stops at its `manuscripts` target, and the
    report says how many ideas per hour that took and what their ideation cost."""
    import yaml

    llm = {
        "providers": {"anthropic": {"kind": "anthropic", "api_key_env": "SILVA_TEST_NO_SUCH_KEY"}},
        "models": {"haiku": {"provider": "anthropic", "model": "claude-haiku-4-5"}},
        "roles": {r: {"model": "haiku"} for r in ("code", "feedback", "selection", "writeup", "review")},
    }
    cfg = {
        "name": "rolling",
        "output_dir": str(tmp_path / "runs"),
        "replicates": 1,
        "stages": {s: {"max_nodes": 2} for s in ("preliminary", "hyperparameter", "agenda", "ablation")},
        "budgets": {"wall_clock_s": 86400},
        "executor": {"kind": "inprocess", "max_in_flight": 8},
        "sandbox": "none",
        "llm": llm,
        "writeup": {},
        "review": {},
        "ideation": {
            "topic": "label noise",
            "metrics": [{"name": "accuracy", "direction": "maximize", "primary": True}],
            "reflections": 1,
            "novelty_rounds": 2,
            "manuscripts": 5,
        },
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = plan_json(capsys, str(path), "--seed", "2")
    assert r["outcome"] == "finished" and r["message"].startswith(f"{r['ideas_admitted']} idea(s): ")
    assert r["papers_reviewed"] >= 5 and r["ideas_admitted"] >= 5
    assert (
        r["llm_calls"]["ideation"] == 5 * r["ideas_admitted"]
    )  # a draft, 1 reflection, 2 rounds, a decision
    assert r["ideas_per_hour"] == pytest.approx(r["ideas_admitted"] / (r["wall_s"] / 3600), rel=1e-3)


def test_without_a_run_to_draw_from_the_plan_says_what_it_assumed_and_what_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = str(small_config(tmp_path, budgets={"wall_clock_s": None}))
    capsys.readouterr()
    assert main(["plan", cfg, "--slots", "2"]) == 0
    out = capsys.readouterr().out
    # The config times an experiment out at 60 s: the plan does not assume 20-minute ones.
    assert "default duration: lognormal, median 6.324 s, sigma 0.75" in out
    assert "median 6.324 s, the config's node_timeout_s of 60 s taken as 3 sigma above it" in out
    assert "LLM code: 1 call(s) a job, latency median 60 s" in out
    decides = out.split("what decides it", 1)[1]
    assert "experiment durations doubled: wall time +" in decides and "LLM latencies doubled" in decides


@pytest.mark.slow
def test_the_experiment_duration_a_plan_assumes_comes_from_the_flag_the_settings_or_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def assumed(*args: str) -> str:
        capsys.readouterr()
        assert main(["plan", *args]) == 0
        return capsys.readouterr().out.split("assumed (", 1)[1]

    cfg = str(small_config(tmp_path / "a", budgets={"wall_clock_s": None, "node_timeout_s": 36000}))
    assert "default duration: lognormal, median 1200 s" in assumed(cfg)  # a long timeout: the built-in
    out = assumed(cfg, "--experiment-s", "30")
    assert "default duration: lognormal, median 30 s" in out and "duration: --experiment-s" in out
    plan_yaml = tmp_path / "plan.yaml"
    plan_yaml.write_text("durations:\n  default: {median_s: 45, sigma: 0.5}\n")
    timed = str(small_config(tmp_path / "b", budgets={"wall_clock_s": None, "node_timeout_s": 60}))
    out = assumed(timed, "--settings", str(plan_yaml))
    assert "default duration: lognormal, median 45 s, sigma 0.5" in out and "--settings, median 45 s" in out


@pytest.mark.slow
def test_the_plan_of_the_readme_example_assumes_what_its_config_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The offline example: experiments timed out at 60 s, models answered by a scripted provider.
    Its plan assumes neither the 20-minute experiments nor the hosted models' latency."""
    capsys.readouterr()
    assert main(["plan", str(Path(__file__).parents[2] / "examples" / "ideas" / "run.yaml")]) == 0
    out = capsys.readouterr().out
    assert "default duration: lognormal, median 6.324 s, sigma 0.75" in out
    assert "LLM code: 1 call(s) a job, latency median 0.001 s (sigma 0)" in out
    assert "stops          finished" in out


def test_roles_a_scripted_provider_answers_take_no_time_in_a_plan() -> None:
    """The offline example's scripted models answer at once: a plan assumes no hosted latency."""
    cfg = load_config(Path(__file__).parents[2] / "examples" / "ideas" / "run.yaml")
    settings = instant_scripted(cfg, PlanSettings())
    assert settings.llm["code"].latency.median_s == 1e-3 and settings.llm["feedback"].latency.sigma == 0
    assert PlanSettings().llm["code"].latency.median_s == 60.0  # the hosted default, untouched


def test_experiments_in_flight_at_the_wall_clock_stop_count_the_time_they_held(tmp_path: Path) -> None:
    fixed = {k: Lognormal(median_s=s, sigma=0) for k, s in (("short", 1.0), ("long", 10.0), ("default", 9))}
    ex = virtual(tmp_path, PlanSettings(durations=fixed))
    ex.budgets = Budgets(wall_clock_s=4)
    ex.submit(Sleep("long"), Resources(num_cpus=1, num_gpus=1))
    with pytest.raises(BudgetStop):
        ex.wait([0], 0.5)
    assert ex.held_s["default"] == pytest.approx(4.0) and ex.gpu_s == pytest.approx(4.0)


@dataclass
class Paper(Sleep):
    """A job of the CPU pool (a paper's figures and LaTeX): no slot."""

    holds_resources: bool = False
    cpu_pool: bool = True


def test_a_paper_in_the_cpu_pool_is_cpu_time_but_no_slot_time(tmp_path: Path) -> None:
    """As in the run (engine/dispatch.py): a paper takes no experiment slot, so none of its
    idea's slot time nor of the utilization, but its CPUs are charged."""
    ex = virtual(tmp_path, PlanSettings(durations={"long": Lognormal(median_s=5.0, sigma=0)}))
    done = ex.wait([ex.submit(Paper("long"), Resources(num_cpus=1))], 0.5)
    assert done is not None and done.result is not None
    assert ex.cpu_s == pytest.approx(5.0) and not ex.held_s and ex.experiment_s == ex.gpu_s == 0


def test_a_paper_in_flight_at_the_wall_clock_stop_counts_the_cpu_time_it_spent(tmp_path: Path) -> None:
    ex = virtual(tmp_path, PlanSettings(durations={"long": Lognormal(median_s=10.0, sigma=0)}))
    ex.budgets = Budgets(wall_clock_s=4)
    ex.submit(Paper("long"), Resources(num_cpus=2))
    with pytest.raises(BudgetStop):
        ex.wait([0], 0.5)
    assert ex.cpu_s == pytest.approx(8.0) and not ex.held_s and ex.experiment_s == ex.gpu_s == 0


def test_settings_that_name_some_kinds_keep_the_defaults_of_the_others() -> None:
    s = PlanSettings.model_validate({"durations": {"default": {"median_s": 60}}, "llm": {}})
    assert s.durations["default"].median_s == 60 and s.durations["aggregation"].median_s == 5
    assert s.llm["code"].latency.median_s == 60


def test_a_replay_gives_each_planned_node_its_twins_time_outcome_and_calls(tmp_path: Path) -> None:
    """Replay: the n-th planned node of an idea and kind to start takes the n-th such node of the
    source run (its slot time, failure, metrics, and its own LLM calls in order), so what still
    differs from the run is the plan's model, not the draws."""
    from engine.llm.ledger import CallRecord

    run = Journal.open(tmp_path / "run")
    for node_id, took, status in (("a", 3.0, "good"), ("b", 7.0, "buggy")):
        run.add_node(Node(id=node_id, stage="s", kind="draft"))
        run.attempt_started(node_id, 1, "")
        metrics = [MetricValue(name="acc", value=took / 10)] if status == "good" else []
        result = AttemptResult(
            status=status,
            execution=ExecSummary(wall_s=took),
            metrics=metrics,
            started_at=1,
            finished_at=1 + took,
        )
        run.attempt_finished(node_id, 1, result)
    ledger = tmp_path / "run" / "llm_ledger.jsonl"
    calls = [("a", 2.0), ("b", 5.0), ("b", 6.0)]
    ledger.write_text(
        "".join(
            CallRecord(
                role="code", node_id=n, provider="p", model="m", latency_s=s, attempts=1
            ).model_dump_json()
            + "\n"
            for n, s in calls
        )
    )
    journal = Journal.open(tmp_path / "run", read_only=True)
    replay = Source(PlanSettings(), journal, ledger, replay=True)
    first, second = Node(id="p1", stage="s", kind="draft"), Node(id="p2", stage="s", kind="draft")
    rng = random.Random(0)
    assert replay.duration("draft", rng, first) == 3.0 and replay.duration("draft", rng, second) == 7.0
    assert replay.call("code", rng, second)[0] == 5.0 and replay.call("code", rng, second)[0] == 6.0
    assert replay.buggy("draft", rng, first) is False and replay.buggy("draft", rng, second) is True
    assert replay.values("draft", [], rng, first)[0].value == pytest.approx(0.3)
    assert replay.call("code", rng, first)[0] == 2.0
    # A third node has no twin: it is drawn from the run's own, as without replay.
    assert replay.duration("draft", rng, Node(id="p3", stage="s", kind="draft")) in (3.0, 7.0)
    drawn = Source(PlanSettings(), journal, ledger)
    assert drawn.twin(first) is None


class Clock:
    """time.time as a test sets it: the journal stamps events with it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def agentic_source(tmp: Path, monkeypatch: pytest.MonkeyPatch, nodes: list[dict[str, Any]]) -> Journal:
    """A source run of pipelined nodes (think, run, judge), each with the step spans, outcome and
    judgement given, at the clock's times."""
    from search.agentic.operators.job import Proposed, Ran
    from search.agentic.operators.outcome import OperatorOutcome
    from search.agentic.operators.schemas import Judgement

    clock = Clock()
    monkeypatch.setattr("time.time", clock)
    run = Journal.open(tmp / "run")
    for i, spec in enumerate(nodes):
        node_id = f"n{i}"
        run.add_node(Node(id=node_id, stage=spec.get("stage", "ablation"), kind=spec.get("kind", "ablation")))
        run.attempt_started(node_id, 1, "think")
        clock.now += spec.get("think", 1.0)
        failed = spec.get("exhausted", False)
        proposed = Proposed(proposal_error="named only tried ones" if failed else "", exhausted=failed)
        run.step_finished(node_id, 1, StepResult(step="think", outcome=proposed))
        if not failed:
            run.attempt_started(node_id, 1, "run")
            started = clock.now + 0.5  # the job starts after its dispatch
            clock.now += spec.get("run", 4.0)
            ran = Ran(workspace="", execution=ExecSummary(wall_s=2.0))
            run.step_finished(
                node_id,
                1,
                StepResult(step="run", outcome=ran, started_at=started, finished_at=clock.now - 0.5),
            )
        run.attempt_started(node_id, 1, "judge")
        clock.now += spec.get("judge", 1.0)
        verdict = Judgement(is_buggy=False, reason="r", summary="s", converged=spec.get("converged"))
        outcome = OperatorOutcome(
            operator="ablation",
            exhausted=failed,
            status_rule="proposal" if failed else "ok",
            judgement=verdict,
        )
        status = "buggy" if failed else "good"
        execution = ExecSummary() if failed else ExecSummary(wall_s=2.0)
        metrics = [] if failed else [MetricValue(name="acc", value=0.5)]
        run.attempt_finished(
            node_id,
            1,
            AttemptResult(
                status=status,
                outcome=outcome,
                execution=execution,
                metrics=metrics,
                started_at=clock.now - 1.0,
                finished_at=clock.now,
            ),
        )
    monkeypatch.undo()
    return Journal.open(tmp / "run", read_only=True)


def test_steps_take_the_time_the_source_runs_driver_saw_them_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An LLM step takes its whole span in the source run (prompt, calls, re-asks, parsing,
    dispatch), not only its call's latency; an experiment its run step from submission to result
    journaled (dispatch and collection included), not only the span its result reports."""
    source = Source(
        PlanSettings(), agentic_source(tmp_path, monkeypatch, [{"think": 2.0, "judge": 3.0, "run": 9.0}])
    )
    rng = random.Random(0)
    assert source.step_time("think", rng, None, 0.4) == pytest.approx(2.0)
    assert source.step_time("judge", rng, None, 0.4) == pytest.approx(3.0)
    assert source.step_time("selection", rng, None, 0.4) == 0.4  # none in the run: its calls' latency
    assert source.duration("ablation", rng) == pytest.approx(9.0)  # the result says 8 s
    assert source.own_share == pytest.approx(2.0 / 9.0)


def test_a_stage_runs_out_of_variants_and_converges_where_the_source_runs_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third ablation of the source's stage named only tried ones (the stage's end) and its
    second good tuning judgement said converged: a planned stage of theirs ends at the same place,
    not at its node budget nor at a random node."""
    ablations = [{}, {}, {"exhausted": True, "think": 9.0}]
    tunings = [
        {"kind": "hyperparameter", "stage": "hyperparameter", "converged": c} for c in (False, True, True)
    ]
    source = Source(PlanSettings(), agentic_source(tmp_path, monkeypatch, ablations + tunings))
    rng = random.Random(0)
    ablation = [Node(id=f"a{i}", idea="default", stage="ablation", kind="ablation") for i in range(4)]
    assert [source.proposal("ablation", rng, n) for n in ablation] == [(False, False)] * 2 + [
        (True, True)
    ] * 2
    tuning = [
        Node(id=f"h{i}", idea="default", stage="hyperparameter", kind="hyperparameter") for i in range(3)
    ]
    assert [source.converges("hyperparameter", rng, n) for n in tuning] == [False, True, True]
    # The exhausted proposal ran nothing: no experiment time of it to draw. Its think step took
    # its re-asks' time: a failed proposal's is drawn from those, the others' from the rest.
    assert sorted(source.took["ablation"]) == pytest.approx([4.0, 4.0])
    assert source.step_time("think", rng, None, 0.4, failed=True) == pytest.approx(9.0)
    assert max(source.step_time("think", rng, None, 0.4) for _ in range(20)) == pytest.approx(1.0)


def test_a_stage_runs_as_many_variants_as_the_source_stage_though_its_first_proposal_ran_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With look-ahead, proposals think together: the source stage's first proposal ran out of
    variants while the two made beside it named variants and ran. A planned stage of it runs two
    too, not none (planned by the exhausted one's place, a forest at LLM latency 4x ran 1
    ablation for the run's 8, and was 28% short of an independent run)."""
    ablations = [{"exhausted": True, "think": 9.0}, {}, {}]
    source = Source(PlanSettings(), agentic_source(tmp_path, monkeypatch, ablations))
    rng = random.Random(0)
    planned = [Node(id=f"a{i}", idea="default", stage="ablation", kind="ablation") for i in range(4)]
    assert [source.proposal("ablation", rng, n) for n in planned] == [(False, False)] * 2 + [(True, True)] * 2


def test_a_stage_regrown_from_a_new_leader_names_variants_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source stage named 2 variants, then ran out. In the plan, the 2 proposals grown from
    the previous stage's first leader are discarded when another node takes the lead: the run
    voids a discarded node's claim, so the set grown from the new leader names 2 variants
    before it runs out, not none (counted with the discarded proposals, a one-idea plan's
    ablation stage ran no experiment where its run ran 3)."""
    source = Source(PlanSettings(), agentic_source(tmp_path, monkeypatch, [{}, {}, {"exhausted": True}]))
    rng = random.Random(0)
    plan = Journal.open(tmp_path / "plan")
    planned = [
        plan.add_node(Node(id=f"a{i}", idea="default", stage="ablation", kind="ablation")) for i in range(5)
    ]
    assert [source.proposal("ablation", rng, n) for n in planned[:2]] == [(False, False)] * 2
    for n in planned[:2]:
        plan.discard(n.id, "speculative: grew from the old leader")
    regrown = [source.proposal("ablation", rng, n) for n in planned[2:]]
    assert regrown == [(False, False)] * 2 + [(True, True)]


def test_a_tuning_stage_converges_at_the_place_of_the_judgement_asked_for_that_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source's three tuning nodes were judged in the order n1, n2, n0, and only n0's
    judgement said converged: the third asked for. A plan draws convergence as it asks for
    judgements, so it converges at its third, not at its first (n0's place by creation: a run
    at LLM latency 4x whose first-made tuning node was judged 7th of 8 was planned to converge
    at once, and ended its tuning stage at 5.6 nodes where the run made 8)."""
    from search.agentic.operators.job import Proposed, Ran
    from search.agentic.operators.outcome import OperatorOutcome
    from search.agentic.operators.schemas import Judgement

    clock = Clock()
    monkeypatch.setattr("time.time", clock)
    run = Journal.open(tmp_path / "run")
    for node_id in ("n0", "n1", "n2"):
        run.add_node(Node(id=node_id, stage="hyperparameter", kind="hyperparameter"))
        run.attempt_started(node_id, 1, "think")
        clock.now += 1.0
        run.step_finished(node_id, 1, StepResult(step="think", outcome=Proposed()))
        run.attempt_started(node_id, 1, "run")
        clock.now += 1.0
        ran = Ran(workspace="", execution=ExecSummary(wall_s=1.0))
        run.step_finished(node_id, 1, StepResult(step="run", outcome=ran))
    for node_id in ("n1", "n2", "n0"):
        run.attempt_started(node_id, 1, "judge")
        clock.now += 1.0
        verdict = Judgement(is_buggy=False, reason="r", summary="s", converged=node_id == "n0")
        result = AttemptResult(
            status="good",
            outcome=OperatorOutcome(operator="hyperparameter", status_rule="ok", judgement=verdict),
            execution=ExecSummary(wall_s=1.0),
            metrics=[MetricValue(name="acc", value=0.5)],
            started_at=clock.now - 1.0,
            finished_at=clock.now,
        )
        run.attempt_finished(node_id, 1, result)
    monkeypatch.undo()
    source = Source(PlanSettings(), Journal.open(tmp_path / "run", read_only=True))
    rng = random.Random(0)
    planned = [
        Node(id=f"h{i}", idea="default", stage="hyperparameter", kind="hyperparameter") for i in range(3)
    ]
    assert [source.converges("hyperparameter", rng, n) for n in planned] == [False, False, True]


def test_a_failed_proposal_is_judged_without_a_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A think step whose proposal fails runs no experiment, and its judge step asks no model:
    the node ends buggy by the proposal rule, and ran out of variants when the source's did."""
    from types import SimpleNamespace
    from typing import cast

    from search.agentic.operators.job import JudgeJob, Proposed
    from search.agentic.operators.outcome import OperatorOutcome

    source_run = agentic_source(tmp_path, monkeypatch, [{"exhausted": True}])
    journal = Journal.open(tmp_path / "plan")
    node = journal.add_node(Node(id="a0", stage="ablation", kind="ablation"))
    ex = PlanExecutor(journal, Source(PlanSettings(), source_run), 0, Budgets(), {})
    failed, exhausted = ex.source.proposal("ablation", ex.rng, node)
    assert failed and exhausted
    proposed = Proposed(proposal_error="simulated failure", exhausted=True)
    job = cast(JudgeJob, SimpleNamespace(proposed=proposed, ran=None, a=SimpleNamespace(vision=False)))
    _, result, dollars = ex._draw_judge(job, node)
    assert result.status == "buggy" and dollars == 0.0 and not ex.llm_calls
    assert isinstance(result.outcome, OperatorOutcome)
    assert result.outcome.status_rule == "proposal" and result.outcome.exhausted


def test_utilization_counts_experiments_not_aggregations_nor_selections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An aggregation holds a slot but is no experiment, and a selection's or an aggregation's
    empty execution is no experiment time: neither enters the plan's utilization nor the share
    of their slot time experiments spend on their own work (0.85 for 0.97 in a forest's plan)."""
    from engine.attempt import ExperimentJob

    source_run = agentic_source(tmp_path, monkeypatch, [{"run": 4.0}])
    journal = Journal.open(source_run.log.path.parent, read_only=True)
    source = Source(PlanSettings(), journal)
    source._add(
        Node(id="s", stage="s", kind="selection", execution=ExecSummary(), finished_at=50.0, started_at=10.0),
        0.0,
    )
    assert source.own_share == pytest.approx(2.0 / 4.0)
    plan_journal = Journal.open(tmp_path / "plan")
    for kind in ("aggregation", "ablation"):
        plan_journal.add_node(Node(id=kind, stage="s", kind=kind))
    fixed = {k: Lognormal(median_s=3.0, sigma=0) for k in ("aggregation", "ablation")}
    ex = PlanExecutor(plan_journal, Source(PlanSettings(durations=fixed), None), 0, Budgets(), {})
    experiment = ExperimentJob.__new__(ExperimentJob)
    object.__setattr__(experiment, "node_id", "ablation")
    ex._charge(Sleep("aggregation"), Resources(), 3.0)
    ex._charge(experiment, Resources(), 3.0)
    assert ex.experiment_s == pytest.approx(3.0) and ex.held_s["default"] == pytest.approx(6.0)


def test_a_replay_gives_a_node_the_run_discarded_what_it_showed_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node the run discarded is a twin too: its steps that ended take their spans and
    outcomes (a run step's time, failure and metrics), and a step the run cut takes longer than
    it had run by then. Drawn instead, a draft the run cut after 8.5 s of thinking thought 3.2 s
    in the replay and ran: the one-idea chain at 1x came back +10% wall and +24% nodes."""
    from engine.events import AttemptCancelled
    from search.agentic.operators.job import Proposed, Ran

    clock = Clock()
    monkeypatch.setattr("time.time", clock)
    run = Journal.open(tmp_path / "run")
    for node_id in ("cut", "judging", "done", "kept"):
        run.add_node(Node(id=node_id, stage="preliminary", kind="draft"))
    # `cut` thinks from the start; `kept`, `done` and `judging` think 1, 2 and 1.5 s meanwhile.
    run.attempt_started("cut", 1, "think")
    for node_id, think in (("kept", 1.0), ("done", 2.0), ("judging", 1.5)):
        run.attempt_started(node_id, 1, "think")
        clock.now += think
        run.step_finished(node_id, 1, StepResult(step="think", outcome=Proposed(code="x")))
    # `judging` runs 6 s, reports a metric, and is discarded while its judgement is out.
    run.attempt_started("judging", 1, "run")
    clock.now += 6.0
    ran = Ran(workspace="", execution=ExecSummary(wall_s=5.0), metrics=[MetricValue(name="acc", value=0.7)])
    run.step_finished("judging", 1, StepResult(step="run", outcome=ran))
    run.attempt_started("judging", 1, "judge")
    for node_id, took in (("kept", 3.0), ("done", 4.0)):
        result = AttemptResult(
            status="good",
            execution=ExecSummary(wall_s=took),
            metrics=[MetricValue(name="acc", value=took / 10)],
            started_at=clock.now,
            finished_at=clock.now + took,
        )
        run.attempt_finished(node_id, 1, result)
    # 10.5 s into `cut`'s think step, the stage's search ends: the rest are discarded.
    for node_id in ("cut", "judging", "done"):
        run.discard(node_id, "the stage's search ended")
    for node_id in ("cut", "judging"):
        run.record(AttemptCancelled(node_id=node_id, attempt=1))
    monkeypatch.undo()
    journal = Journal.open(tmp_path / "run", read_only=True)

    replay = Source(PlanSettings(), journal, replay=True)
    rng = random.Random(0)
    cut, judging, done, kept = (Node(id=f"p{i}", stage="preliminary", kind="draft") for i in range(4))
    assert [replay.twin(n) for n in (cut, judging, done, kept)] == ["cut", "judging", "done", "kept"]
    # Cut 10.5 s into its think step, longer than any think the run finished: the cut and one more.
    assert all(replay.step_time("think", rng, cut, 0.4) > 10.5 for _ in range(20))
    assert replay.step_time("think", rng, judging, 0.4) == pytest.approx(1.5)
    assert replay.duration("draft", rng, judging) == pytest.approx(6.0)  # its run step's span
    assert replay.buggy("draft", rng, judging) is False
    assert replay.values("draft", [], rng, judging)[0].value == pytest.approx(0.7)
    assert replay.proposal("draft", rng, judging) == (False, False)
    assert replay.duration("draft", rng, done) == pytest.approx(4.0)
    assert replay.values("draft", [], rng, done)[0].value == pytest.approx(0.4)
    # The draws leave discarded nodes out, as the plan counts them.
    assert Source(PlanSettings(), journal).took["draft"] == pytest.approx([3.0])


def test_a_plan_draws_step_times_as_long_as_the_steps_the_run_cut_would_have_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run cut a think step after 1.5 s (its node discarded): it would have taken longer, so
    its share of the draws goes to the thinks that took longer (2 s), not to all of them; the
    slow ones are those a stage's end cuts, and a plan of the finished ones alone was short."""
    from engine.events import AttemptCancelled
    from search.agentic.operators.job import Proposed

    clock = Clock()
    monkeypatch.setattr("time.time", clock)
    run = Journal.open(tmp_path / "run")
    for node_id, think in (("fast", 1.0), ("cut", 1.5), ("slow", 2.0)):
        run.add_node(Node(id=node_id, stage="preliminary", kind="draft"))
        run.attempt_started(node_id, 1, "think")
        clock.now += think
        if node_id == "cut":
            run.discard(node_id, "the stage's search ended")
            run.record(AttemptCancelled(node_id=node_id, attempt=1))
        else:
            run.step_finished(node_id, 1, StepResult(step="think", outcome=Proposed(code="x")))
    monkeypatch.undo()
    source = Source(PlanSettings(), Journal.open(tmp_path / "run", read_only=True))
    rng = random.Random(0)
    draws = [source.step_time("think", rng, None, 0.4) for _ in range(600)]
    assert sorted(set(draws)) == pytest.approx([1.0, 2.0])
    # 2 s takes the cut's share too: 2 in 3 draws, not 1 in 2.
    assert sum(d > 1.5 for d in draws) / len(draws) == pytest.approx(2 / 3, abs=0.06)


def test_a_judgement_of_a_run_takes_a_judgement_of_a_runs_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed proposal's judgement calls no model and takes next to no time: a planned
    judgement of an experiment is drawn from the run's judgements of experiments (drawn from all,
    the one-idea plans' judgements came out 4-19% short), a failed proposal's from its own."""
    from types import SimpleNamespace
    from typing import cast

    from search.agentic.operators.job import JudgeJob, Proposed, Ran

    source_run = agentic_source(tmp_path, monkeypatch, [{"judge": 3.0}, {"exhausted": True, "judge": 0.01}])
    journal = Journal.open(tmp_path / "plan")
    node = journal.add_node(Node(id="a0", stage="ablation", kind="ablation"))
    ex = PlanExecutor(journal, Source(PlanSettings(), source_run), 0, Budgets(), {})
    ran = Ran(workspace="", execution=ExecSummary(wall_s=2.0), metrics=[MetricValue(name="acc", value=0.5)])
    judged = cast(
        JudgeJob, SimpleNamespace(proposed=Proposed(code="x"), ran=ran, a=SimpleNamespace(vision=False))
    )
    assert {round(ex._draw_judge(judged, node)[0], 2) for _ in range(20)} == {3.0}
    failed = Proposed(proposal_error="simulated failure")
    unrun = cast(JudgeJob, SimpleNamespace(proposed=failed, ran=None, a=SimpleNamespace(vision=False)))
    assert {round(ex._draw_judge(unrun, node)[0], 2) for _ in range(20)} == {0.01}


def test_cut_steps_move_their_weight_to_longer_times_and_the_longest_cut_keeps_the_rest() -> None:
    """Kaplan-Meier by hand: spans 1 and 3, steps cut at 2 and 5. The span 1 has a quarter; the
    cut at 2 gives its quarter to the two times longer (3 and 5), so 3 has 3/8; the cut at 5,
    longer than every span, is drawn as 5 with the remaining 3/8."""
    values, weights = _to_the_right([3.0, 1.0], [5.0, 2.0])
    share = {v: w / sum(weights) for v, w in zip(values, weights, strict=True)}
    assert share == pytest.approx({1.0: 0.25, 3.0: 0.375, 5.0: 0.375})
    assert _to_the_right([], [4.0, 2.0]) == ([4.0], [1.0])  # nothing ended: at least the longest cut
