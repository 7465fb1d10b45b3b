"""Compute budgets: exact accounting, never starting past a budget, changing budgets, allocation."""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine import events as ev
from engine.budgets import REQUESTS_DIR, ComputeMeter, Spend
from engine.config import Budgets
from engine.journal import EVENTS_FILE, Journal
from search.agentic.plan import PLAN as AGENTIC_PLAN
from search.allocation import Allocation, IdeaInfo, Rung, best_over_baseline, best_so_far, rung_decision
from search.config import AllocationConfig, IdeaBudgets, StageConfig
from search.forest import TreeSettings
from search.template.plan import PLAN
from silva import lifecycle
from silva.cli.main import main
from silva.config import load_config
from tests.budgets.support import VirtualExecutor, forest_config
from tests.helpers import make_config, make_template

REPO = Path(__file__).resolve().parents[2]


def run_virtual(cfg_path: Path, hours: float = 1.0) -> tuple[Path, Journal, VirtualExecutor]:
    cfg = load_config(cfg_path)
    run_dir, journal = lifecycle.create_run(cfg)
    ex = VirtualExecutor(hours)
    lifecycle.execute(cfg, journal, executor=ex)
    return run_dir, journal, ex


def test_job_never_starts_past_the_gpu_budget_and_running_ones_are_counted(tmp_path: Path) -> None:
    run_dir, j, _ = run_virtual(forest_config(tmp_path, budgets={"gpu_hours": 3.0}))
    assert j.stop is not None and j.stop.budget == "gpu_hours"
    spent = 0.0
    for e in j.log.events:
        if isinstance(e, ev.ComputeUsed):
            spent += e.gpu_s / 3600
        elif isinstance(e, ev.AttemptStarted):
            assert spent < 3.0, "an attempt started with the GPU budget already used up"
    assert spent >= 3.0 and not any(isinstance(e, ev.AttemptCancelled) for e in j.log.events)
    # Fractional GPUs count as fractions: 0.5 GPU for an hour is half a GPU-hour.
    assert all(e.gpu_s in (0.0, 1800.0) for e in j.log.read(ev.ComputeUsed))
    j.log.close()


def test_raised_budget_resumes_where_it_stopped_without_redoing_a_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, j, _ = run_virtual(forest_config(tmp_path, n=2, budgets={"gpu_hours": 2.0}))
    before = {n.id for n in j if n.is_finished}
    j.log.close()
    assert main(["budget", str(run_dir), "--gpu-hours", "100"]) == 0
    assert "continue with: silva resume" in capsys.readouterr().out
    cfg, journal = lifecycle.open_run(run_dir)
    lifecycle.execute(cfg, journal, executor=VirtualExecutor())
    assert journal.finished is not None
    finished = [e.node_id for e in journal.log.read(ev.AttemptFinished)]
    assert len(finished) == len(set(finished)) and before <= set(finished)
    assert [e.changes for e in journal.log.read(ev.BudgetChanged)] == [{"gpu_hours": 100.0}]
    journal.log.close()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--gpu-hours", "-5"], "above zero"),
        (["--gpu-hours", "0"], "above zero"),
        (["--dollars", "abc"], "not a number"),
        (["--cpu-hours", "nan"], "not a finite number"),
        (["--gpu-hours", "0.5"], "not above what the run has already used"),
        ([], "give at least one"),
    ],
)
def test_bad_budget_values_exit_2_and_change_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    run_dir, j, _ = run_virtual(forest_config(tmp_path, n=2, budgets={"gpu_hours": 2.0}))
    j.log.close()
    events = (run_dir / EVENTS_FILE).read_bytes()
    assert main(["budget", str(run_dir), *args]) == 2
    assert message in capsys.readouterr().err
    assert (run_dir / EVENTS_FILE).read_bytes() == events and not (run_dir / REQUESTS_DIR).exists()


HOLD = (
    "import sys, time; from engine.journal import Journal; "
    "Journal.open(__import__('pathlib').Path(sys.argv[1])); print('held', flush=True); time.sleep(60)"
)


def test_live_driver_picks_up_a_change_from_a_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, j, _ = run_virtual(forest_config(tmp_path, n=2, budgets={"gpu_hours": 2.0}))
    j.log.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert main(["budget", str(run_dir), "--gpu-hours", "50", "--dollars", "3"]) == 0
        assert "running driver applies it" in capsys.readouterr().out
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert len(list((run_dir / REQUESTS_DIR).glob("*.json"))) == 1
    journal = Journal.open(run_dir)  # the driver's side: its meter journals the request
    meter = ComputeMeter(journal, Budgets(gpu_hours=2.0))
    assert meter.poll(force=True).gpu_hours == 50.0 and meter.budgets.dollars == 3.0
    assert [e.changes for e in journal.log.read(ev.BudgetChanged)] == [{"gpu_hours": 50.0, "dollars": 3.0}]
    assert not list((run_dir / REQUESTS_DIR).glob("*.json"))
    journal.log.close()


@pytest.mark.e2e
def test_accounting_is_exact_over_sigkill_and_resume(tmp_path: Path) -> None:
    tpl = make_template(tmp_path / "tpl", fixed={"sleep": 0.4})
    cfg_path = make_config(
        tmp_path, tpl, replicates=1, resources={"default": {"num_cpus": 1, "num_gpus": 0.25}}
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "silva.cli.main", "run", str(cfg_path)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    events_file = None
    while time.time() < deadline:
        found = list((tmp_path / "runs").glob(f"*/{EVENTS_FILE}"))
        if found and found[0].read_text().count('"compute_used"') >= 3:
            events_file = found[0]
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert events_file is not None
    run_dir = events_file.parent
    assert main(["resume", str(run_dir)]) == 0
    j = Journal.open(run_dir, read_only=True)
    used = [e for e in j.log.read(ev.ComputeUsed)]
    orphans = [e for e in used if e.orphan]
    assert orphans, "the attempts the killed driver left running are charged"
    steps = {(e.node_id, e.attempt): e for e in j.log.read(ev.AttemptFinished)}
    expected = 0.0
    for e in used:
        if e.orphan or e.how == "cancelled":  # held until the kill, or until speculation was discarded
            expected += e.seconds * e.num_gpus
            assert (e.node_id, e.attempt) not in steps
        else:  # the result's own timings (journaled with the charge, and with the result when it got in)
            step = steps.get((e.node_id, e.attempt))
            if step is not None:
                assert (step.result.started_at, step.result.finished_at) == (e.started_at, e.finished_at)
            assert e.started_at is not None and e.finished_at is not None
            expected += (e.finished_at - e.started_at) * e.num_gpus
    assert math.isclose(Spend.replay(j.log.events).total.gpu_s, expected, rel_tol=1e-9)
    assert all(e.num_gpus == 0.25 for e in used if e.kind != "aggregation")
    assert len(used) == len({(e.node_id, e.attempt) for e in used})  # charged once each


# -- allocation ------------------------------------------------------------------------------------
def test_rung_decision_on_hand_made_scores() -> None:
    scores = [0.30, 0.25, 0.10, 0.05, 0.0, -0.1]  # six ideas at a rung, eta 3: two go on
    decide = [rung_decision(s, scores, 3, pinned=False, final=True, keep=False).decision for s in scores]
    assert decide == ["promoted", "promoted", "stopped", "stopped", "stopped", "stopped"]
    # ASHA: the first arrivals wait until enough others arrive; a pinned idea never waits or stops.
    assert rung_decision(0.3, [0.3, 0.1], 3, pinned=False, final=False, keep=False).decision == "waiting"
    assert rung_decision(-1.0, scores, 3, pinned=True, final=True, keep=False).decision == "promoted"
    assert rung_decision(-1.0, scores, 3, pinned=False, final=True, keep=True).decision == "promoted"
    assert (
        rung_decision(None, [None, None, None], 3, pinned=False, final=True, keep=False).decision
        == "promoted"
    )


class Tree:
    def __init__(self, name: str, inflight: int = 0) -> None:
        self.name, self._inflight = name, inflight

    def inflight(self) -> int:
        return self._inflight


@pytest.mark.parametrize(
    ("progress", "named", "c_score"),
    [
        (None, "best_so_far", 1.1),  # the template mode's own score: the level reached
        ("best_over_baseline", "best_over_baseline", 0.1),  # chosen in config: the gain over the baseline
    ],
)
def test_successive_halving_stops_ideas_returns_budget_and_spares_the_pinned(
    tmp_path: Path,
    progress: str | None,
    named: str,
    c_score: float,
) -> None:
    j = Journal.open(tmp_path / "run")
    j.record(ev.RunStarted(config={}, metrics=[{"name": "score", "primary": True}], stages=list(PLAN.names)))
    j.record(ev.SessionStarted(resumed=False))
    gains = {"a": 0.5, "b": 0.4, "c": 0.1, "d": 0.0, "e": -0.1, "pinned": -0.2}
    spec = j.metric_specs[0]
    for k, (idea, gain) in enumerate(gains.items()):
        j.record(ev.NodeCreated(node={"id": f"n{k}", "stage": PLAN.first, "kind": "baseline", "idea": idea}))
        j.record(
            ev.ComputeUsed(
                node_id=f"n{k}",
                attempt=1,
                idea=idea,
                kind="baseline",
                how="finished",
                seconds=3600.0,
                gpu_s=3600.0,
                cpu_s=3600.0,
                num_gpus=1.0,
                num_cpus=1.0,
            )
        )
        j.record(ev.StageBest(idea=idea, stage=PLAN.names[0], node_id=f"n{k}", value=1.0))
        j.record(ev.StageBest(idea=idea, stage=PLAN.names[1], node_id=f"n{k}", value=1.0 + gain))
    meter = ComputeMeter(j, Budgets(gpu_hours=60.0))
    ideas = [IdeaInfo(i, spec, IdeaBudgets(pinned=i == "pinned")) for i in gains]
    alloc = Allocation(
        AllocationConfig(policy="successive_halving", eta=3, progress=progress), j, PLAN, ideas, meter
    )
    assert next(e for e in j.log.read(ev.AllocationDecided)).progress == named
    live = alloc.live([Tree(i) for i in gains])
    assert [t.name for t in live] == ["a", "b", "pinned"]
    stops = {e.idea: e for e in j.log.read(ev.AllocationDecided) if e.decision == "stopped"}
    assert set(stops) == {"c", "d", "e"} and set(j.idea_stopped) == {"c", "d", "e"}
    # Each had a sixth of 60 GPU-hours and spent one: the rest goes back to the pool.
    assert stops["c"].returned_gpu_hours == pytest.approx(9.0)
    assert stops["c"].rung == 2 and stops["c"].score == pytest.approx(c_score)
    assert alloc.ended("c") is not None and alloc.ended("pinned") is None
    # A resumed run reads the decisions back.
    again = Allocation(AllocationConfig(policy="successive_halving", eta=3), j, PLAN, ideas, meter)
    assert set(again.stopped) == {"c", "d", "e"}
    j.log.close()


def test_progress_score_is_the_best_so_far_and_never_below_the_baseline(tmp_path: Path) -> None:
    j = Journal.open(tmp_path / "run")
    j.record(ev.RunStarted(config={}, metrics=[{"name": "score", "primary": True}], stages=list(PLAN.names)))
    spec = j.metric_specs[0]
    for stage, value in zip(PLAN.names, (1.0, 0.8, 1.3)):
        j.record(ev.StageBest(idea="a", stage=stage, node_id=f"n-{stage}", value=value))
    # Agentic ideas are different experiments: an idea's gain over its own baseline. An unlucky
    # tuning stage (0.8 below the baseline's 1.0) leaves the idea at its baseline ...
    assert AGENTIC_PLAN.progress == "best_over_baseline"
    assert best_over_baseline(j, AGENTIC_PLAN, "a", Rung(PLAN.names[1]), spec) == 0.0
    # ... and a later stage's better result counts from the baseline, not from the unlucky stage.
    assert best_over_baseline(j, AGENTIC_PLAN, "a", Rung(PLAN.names[2]), spec) == pytest.approx(0.3)
    # A template's variants share one task and metric: the level reached, never below the baseline.
    assert PLAN.progress == "best_so_far"
    assert best_so_far(j, PLAN, "a", Rung(PLAN.names[1]), spec) == 1.0
    assert best_so_far(j, PLAN, "a", Rung(PLAN.names[2]), spec) == pytest.approx(1.3)
    j.record(
        ev.RunStarted(
            config={},
            metrics=[{"name": "loss", "direction": "minimize", "primary": True}],
            stages=list(PLAN.names),
        )
    )
    assert best_so_far(j, PLAN, "a", Rung(PLAN.names[2]), j.metric_specs[0]) == pytest.approx(
        -0.8
    )  # oriented
    j.log.close()


def test_successive_halving_gives_freed_budget_and_slots_to_promoted_ideas(tmp_path: Path) -> None:
    j = Journal.open(tmp_path / "run")
    j.record(ev.RunStarted(config={}, metrics=[{"name": "score", "primary": True}], stages=list(PLAN.names)))
    j.record(ev.SessionStarted(resumed=False))
    gains = {"a": 0.4, "b": 0.5, "c": 0.1, "d": 0.0, "e": -0.1, "f": -0.2}
    for k, (idea, gain) in enumerate(gains.items()):
        j.record(ev.NodeCreated(node={"id": f"n{k}", "stage": PLAN.first, "kind": "baseline", "idea": idea}))
        j.record(
            ev.ComputeUsed(
                node_id=f"n{k}",
                attempt=1,
                idea=idea,
                kind="baseline",
                how="finished",
                seconds=3600.0,
                gpu_s=3600.0,
                cpu_s=3600.0,
                num_gpus=1.0,
                num_cpus=1.0,
            )
        )
        j.record(ev.StageBest(idea=idea, stage=PLAN.names[0], node_id=f"n{k}", value=1.0))
        j.record(ev.StageBest(idea=idea, stage=PLAN.names[1], node_id=f"n{k}", value=1.0 + gain))
    meter = ComputeMeter(j, Budgets(gpu_hours=60.0))
    ideas = [IdeaInfo(i, j.metric_specs[0], IdeaBudgets()) for i in gains]
    nodes = {name: 4 for name in PLAN.names}
    cfg = AllocationConfig(policy="successive_halving", eta=3)
    alloc = Allocation(cfg, j, PLAN, ideas, meter, stage_nodes=nodes)
    assert [t.name for t in alloc.live([Tree(i) for i in gains])] == ["a", "b"]
    # ASHA order: the promoted ideas at the highest rung, best score first, each may take every
    # slot; a tree with nothing in flight first gets one (it may have a rung decision to record).
    assert [(t.name, cap) for t, cap in alloc.plan([Tree("a", 2), Tree("b", 1)], 8)] == [("b", 8), ("a", 8)]
    assert [(t.name, cap) for t, cap in alloc.plan([Tree("a", 2), Tree("b")], 8)] == [("b", 1), ("a", 8)]
    # Four ideas stopped having spent 1 GPU-hour of their 10: the two left share 56, 2.8 equal
    # shares each, so their next stage (agenda) gets ceil(4 x 2.8) = 12 search nodes instead of 4.
    extended = {e.idea: e for e in j.log.read(ev.AllocationDecided) if e.decision == "extended"}
    assert set(extended) == {"a", "b"} and extended["a"].stage == PLAN.names[2]
    assert extended["a"].max_nodes == 12 and extended["a"].growth == pytest.approx(2.8)
    assert alloc.max_nodes("a", PLAN.names[2], 4) == 12 and alloc.max_nodes("c", PLAN.names[2], 4) == 4
    # The stage manager of a template tree reads the extended budget; a resumed run reads it back.
    settings = TreeSettings(
        SimpleNamespace(stages={n: StageConfig(max_nodes=4) for n in PLAN.names}), alloc, "a"
    )
    assert settings.stages[PLAN.names[2]].max_nodes == 12 and settings.stages[PLAN.names[1]].max_nodes == 4
    again = Allocation(cfg, j, PLAN, ideas, meter, stage_nodes=nodes)
    assert again.max_nodes("b", PLAN.names[2], 4) == 12
    j.log.close()


def test_template_forest_runs_under_each_policy_and_reports_scaling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for policy in ("successive_halving", "bandit"):
        root = tmp_path / policy
        root.mkdir()
        run_dir, j, _ = run_virtual(
            forest_config(root, n=6, allocation={"policy": policy}, budgets={"gpu_hours": 40})
        )
        assert j.finished is not None or j.stop is not None
        decisions = [e for e in j.log.read(ev.AllocationDecided)]
        assert decisions[0].policy == policy and len(decisions) > 1
        j.log.close()
        if policy == "successive_halving":
            assert main(["status", str(run_dir)]) == 0
            assert "allocation: successive_halving (ideas compared on best_so_far)" in capsys.readouterr().out
    assert main(["report", "scaling", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "(forest)" in out and "gain per extra GPU-h" in out
    png = run_dir / "reports" / "scaling" / "scaling_gpu_hours.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    import silva

    sc = silva.open_run(run_dir).scaling()
    assert set(sc.table.idea) == {f"v{i}" for i in range(6)} | {"(forest)"}
    forest = sc.curves[sc.curves.idea == "(forest)"]
    assert forest.gpu_hours.is_monotonic_increasing and forest.best.is_monotonic_increasing
    assert main(["status", str(run_dir)]) == 0
    status = capsys.readouterr().out
    assert "GPU-hours:" in status and "allocation: bandit" in status
