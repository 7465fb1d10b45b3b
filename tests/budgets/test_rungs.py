"""Successive halving with rungs inside stages (ASHA's resource levels): where the rungs are, which
ideas they stop and hold, budget returned, pinned ideas, and decisions read back on resume."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from engine import events as ev
from engine.budgets import ComputeMeter
from engine.config import Budgets
from engine.journal import Journal
from engine.node import AttemptResult, MetricValue, Node
from search.allocation import Allocation, IdeaInfo, Rung, plan_rungs
from search.config import AllocationConfig, IdeaBudgets
from search.template.plan import PLAN
from silva import lifecycle
from silva.cli.main import main
from silva.config import load_config
from tests.budgets.support import VirtualExecutor, forest_config

PRELIMINARY, HYPERPARAMETER, AGENDA, ABLATION = PLAN.names
SIZES = {PRELIMINARY: 1, HYPERPARAMETER: 1, AGENDA: 14, ABLATION: 1}


def test_rungs_of_a_plan_in_each_mode() -> None:
    def rungs(mode: str, **kw: int) -> list[Rung]:
        return list(plan_rungs(PLAN, AllocationConfig(policy="successive_halving", rungs=mode, **kw), SIZES))

    assert rungs("stage_ends") == [Rung(PRELIMINARY), Rung(HYPERPARAMETER), Rung(AGENDA)]
    # After 1, 3, 9 of the agenda's 14 search nodes; none inside the first stage (the progress
    # score's reference), the one-node tuning stage, or the ablations (a fixed list).
    assert rungs("geometric") == [Rung(AGENDA, 1), Rung(AGENDA, 3), Rung(AGENDA, 9)]
    assert rungs("geometric", min_rung_nodes=2) == [Rung(AGENDA, 2), Rung(AGENDA, 6)]
    assert rungs("geometric", eta=2) == [Rung(AGENDA, n) for n in (1, 2, 4, 8)]
    assert rungs("geometric_and_stage_ends") == [
        Rung(PRELIMINARY),
        Rung(HYPERPARAMETER),
        Rung(AGENDA, 1),
        Rung(AGENDA, 3),
        Rung(AGENDA, 9),
        Rung(AGENDA),
    ]


def seeded(tmp: Path, gains: dict[str, list[float | None]]) -> Journal:
    """A journal where each idea has its baseline (1.0, one GPU-hour) and tuning stage decided,
    and has run agenda search nodes scoring 1 + gain, in order."""
    j = Journal.open(tmp / "run")
    j.record(ev.RunStarted(config={}, metrics=[{"name": "score", "primary": True}], stages=list(PLAN.names)))
    j.record(ev.SessionStarted(resumed=False))
    for idea, values in gains.items():
        base = j.add_node(Node(stage=PRELIMINARY, kind="baseline", idea=idea))
        j.attempt_finished(
            base.id, 1, AttemptResult(status="good", metrics=[MetricValue(name="score", value=1.0)])
        )
        j.record(
            ev.ComputeUsed(
                node_id=base.id,
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
        for stage in (PRELIMINARY, HYPERPARAMETER):
            j.record(ev.StageBest(idea=idea, stage=stage, node_id=base.id, value=1.0))
        agenda(j, idea, values)
    return j


def agenda(j: Journal, idea: str, values: list[float | None]) -> None:
    """Agenda search nodes of `idea`: a value is a finished node scoring 1 + value, None one still running."""
    for v in values:
        node = j.add_node(Node(stage=AGENDA, kind="method", idea=idea))
        if v is not None:
            j.attempt_finished(
                node.id, 1, AttemptResult(status="good", metrics=[MetricValue(name="score", value=1.0 + v)])
            )


class Tree:
    def __init__(self, name: str, inflight: int = 0) -> None:
        self.name, self._inflight = name, inflight

    def inflight(self) -> int:
        return self._inflight


def decisions(j: Journal, kind: str) -> dict[str, ev.AllocationDecided]:
    return {e.idea or "": e for e in decisions_made(j, kind)}


def decisions_made(j: Journal, kind: str) -> list[ev.AllocationDecided]:
    return [e for e in j.log.read(ev.AllocationDecided) if e.decision == kind]


def test_rungs_inside_a_stage_hold_ideas_stop_the_right_ones_and_return_their_budget(tmp_path: Path) -> None:
    # Six ideas and a pinned one, each after its first agenda node (eta 3: two of seven go on).
    firsts = {"a": 0.5, "b": 0.4, "c": 0.1, "d": 0.05, "e": 0.0, "f": -0.1, "pinned": -0.2}
    j = seeded(tmp_path, {i: [] for i in firsts})
    meter = ComputeMeter(j, Budgets(gpu_hours=70.0))
    ideas = [IdeaInfo(i, j.metric_specs[0], IdeaBudgets(pinned=i == "pinned")) for i in firsts]
    cfg = AllocationConfig(policy="successive_halving", rungs="geometric", eta=3)
    alloc = Allocation(cfg, j, PLAN, ideas, meter, stage_nodes={**SIZES, AGENDA: 9})
    assert alloc.rungs == (Rung(AGENDA, 1), Rung(AGENDA, 3))
    # Before the first rung, an idea's agenda holds one search node; a pinned idea's is never held.
    assert alloc.max_nodes("a", AGENDA, 9) == 1 and alloc.held_at("a") == Rung(AGENDA, 1)
    assert alloc.max_nodes("pinned", AGENDA, 9) == 9 and alloc.held_at("pinned") is None
    assert alloc.max_nodes("a", HYPERPARAMETER, 1) == 1
    # A rung is reached once its first nodes are all in: with a's node still running, no decision.
    agenda(j, "a", [None])
    alloc.live([Tree(i) for i in firsts])
    assert not decisions(j, "stopped") and not decisions(j, "promoted")
    j.attempt_finished(
        j.in_stage(AGENDA, idea="a")[0].id,
        1,
        AttemptResult(status="good", metrics=[MetricValue(name="score", value=1.5)]),
    )
    for idea, gain in firsts.items():
        if idea != "a":
            agenda(j, idea, [gain])
    live = alloc.live([Tree(i) for i in firsts])
    assert [t.name for t in live] == ["a", "b", "pinned"]
    stops = decisions(j, "stopped")
    assert set(stops) == {"c", "d", "e", "f"} and set(j.idea_stopped) == {"c", "d", "e", "f"}
    c = stops["c"]
    assert (c.rung, c.stage, c.nodes, c.k) == (1, AGENDA, 1, 2)
    # Template variants share one task: the score is the best metric so far (1 + gain), not a gain.
    assert c.score == pytest.approx(1.1) and c.threshold == pytest.approx(1.4)
    assert "at 1 search node(s) of stage agenda" in (c.reason or "")
    # The first idea stopped had a seventh of 70 GPU-hours and spent one: the rest goes back.
    assert c.returned_gpu_hours == pytest.approx(9.0)
    assert all((s.returned_gpu_hours or 0) > 0 for s in stops.values())
    # The promoted ideas are held at the next rung (3 agenda nodes) even though the budget the
    # stopped ones returned extended their agenda stage.
    extended = decisions(j, "extended")
    assert set(extended) == {"a", "b", "pinned"} and (extended["a"].max_nodes or 0) > 9
    assert alloc.max_nodes("a", AGENDA, 9) == 3 and alloc.held_at("a") == Rung(AGENDA, 3)
    assert alloc.max_nodes("pinned", AGENDA, 9) == extended["pinned"].max_nodes
    # An extension is journaled once per growth, not again each round an idea stays held.
    count = len(decisions_made(j, "extended"))
    alloc.live([Tree(i) for i in firsts])
    assert len(decisions_made(j, "extended")) == count
    assert alloc.ended("c") is not None and alloc.ended("pinned") is None
    j.log.close()


def test_a_held_idea_waits_for_arrivals_and_a_resume_reads_the_decisions_back(tmp_path: Path) -> None:
    # a, b and c are at the first rung; d's first agenda node still runs.
    j = seeded(tmp_path, {"a": [0.5], "b": [0.4], "c": [0.3], "d": [None]})
    ideas = [IdeaInfo(i, j.metric_specs[0], IdeaBudgets()) for i in "abcd"]
    cfg = AllocationConfig(policy="successive_halving", rungs="geometric", eta=3)
    nodes = {**SIZES, AGENDA: 4}
    alloc = Allocation(cfg, j, PLAN, ideas, ComputeMeter(j, Budgets(gpu_hours=40.0)), stage_nodes=nodes)
    assert alloc.rungs == (Rung(AGENDA, 1), Rung(AGENDA, 3))
    # ASHA: one of the three arrivals goes on (the top 1/3); the others wait for d, held at one node.
    assert [t.name for t in alloc.live([Tree(i) for i in "abcd"])] == ["a", "d"]
    assert set(decisions(j, "promoted")) == {"a"} and set(decisions(j, "waiting")) == {"b", "c"}
    assert alloc.max_nodes("a", AGENDA, 4) == 3 and alloc.max_nodes("b", AGENDA, 4) == 1
    # A resumed run reads every decision back: nothing is decided again, nothing differently.
    before = len(j.log.events)
    again = Allocation(cfg, j, PLAN, ideas, ComputeMeter(j, Budgets(gpu_hours=40.0)), stage_nodes=nodes)
    assert (again.stopped, again.promoted, again.waiting) == (alloc.stopped, alloc.promoted, alloc.waiting)
    assert again.extended == alloc.extended and again.scores == alloc.scores
    assert [a.max_nodes(i, AGENDA, 4) for a in (alloc, again) for i in "abcd"] == [3, 1, 1, 1] * 2
    assert [t.name for t in again.live([Tree(i) for i in "abcd"])] == ["a", "d"]
    assert len(j.log.events) == before
    # d arrives below a: the rung is complete, one of four goes on, the waiting ideas stop on
    # the scores they were journaled with. a's second rung is its best of its first three nodes
    # (the fourth does not count), and with no other idea left it goes on.
    j.attempt_finished(
        j.in_stage(AGENDA, idea="d")[0].id,
        1,
        AttemptResult(status="good", metrics=[MetricValue(name="score", value=1.45)]),
    )
    agenda(j, "a", [0.9, 0.2, 2.0])
    assert [t.name for t in again.live([Tree(i) for i in "abcd"])] == ["a"]
    new = [
        e for e in j.log.events[before:] if isinstance(e, ev.AllocationDecided) and e.decision != "extended"
    ]
    assert [(e.idea, e.decision, e.rung) for e in new] == [
        ("b", "stopped", 1),
        ("c", "stopped", 1),
        ("d", "stopped", 1),
        ("a", "promoted", 2),
    ]
    assert new[0].scores == {
        "a": pytest.approx(1.5),
        "b": pytest.approx(1.4),
        "c": pytest.approx(1.3),
        "d": pytest.approx(1.45),
    }
    assert new[-1].score == pytest.approx(1.9) and again.held_at("a") is None
    j.log.close()


def test_a_run_stopped_mid_stage_resumes_with_its_rung_decisions_standing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = forest_config(
        tmp_path,
        n=6,
        allocation={"policy": "successive_halving", "rungs": "geometric"},
        stages={
            PRELIMINARY: {"max_nodes": 1},
            HYPERPARAMETER: {"max_nodes": 1},
            AGENDA: {"max_nodes": 9},
            ABLATION: {"max_nodes": 1},
        },
        budgets={"gpu_hours": 12.0},
    )
    cfg = load_config(path)
    run_dir, j = lifecycle.create_run(cfg)
    assert lifecycle.execute(cfg, j, executor=VirtualExecutor()).status == "budget"
    cut = len(j.log.events)
    held = {e.idea: e.rung or 0 for e in decisions(j, "waiting").values()}
    assert held, "the run stopped with ideas waiting at a rung inside the agenda stage"
    j.log.close()
    assert main(["status", str(run_dir)]) == 0
    assert "waits after 3 search node(s) of stage agenda" in capsys.readouterr().out
    assert main(["budget", str(run_dir), "--gpu-hours", "200"]) == 0
    capsys.readouterr()
    cfg, j = lifecycle.open_run(run_dir)
    lifecycle.execute(cfg, j, executor=VirtualExecutor())
    assert j.finished is not None
    events = j.log.events
    made = [e for e in events if isinstance(e, ev.AllocationDecided) and e.rung is not None]
    # Read back, not made again: one policy record, each idea decided at most once per rung (and
    # journaled waiting at most once there), and every decision used the scores journaled before.
    assert sum(e.decision == "policy" for e in events if isinstance(e, ev.AllocationDecided)) == 1
    assert max(Counter((e.idea, e.rung, e.decision) for e in made).values()) == 1
    assert all(
        not (x.idea == y.idea and x.rung == y.rung)
        for x in made
        for y in made
        if x.decision == "stopped" and y.decision == "promoted"
    )
    first: dict[tuple[int | None, str], float | None] = {}
    for e in made:
        for idea, score in (e.scores or {}).items():
            assert first.setdefault((e.rung, idea), score) == score
    # An idea stopped before the resume got no node after it; one held at a rung before the
    # resume got no search node past that rung before it was promoted from it.
    stopped = {
        e.idea or "" for e in events[:cut] if isinstance(e, ev.AllocationDecided) and e.decision == "stopped"
    }
    assert all(e.node.idea not in stopped for e in events[cut:] if isinstance(e, ev.NodeCreated))
    rungs = Allocation(
        cfg.allocation, j, PLAN, [], stage_nodes={s: c.max_nodes for s, c in cfg.stages.items()}
    ).rungs
    for name, r in held.items():
        promoted_at = next(
            (
                k
                for k, e in enumerate(events)
                if isinstance(e, ev.AllocationDecided)
                and e.decision == "promoted"
                and e.idea == name
                and e.rung == r
            ),
            len(events),
        )
        searched = [
            e
            for e in events[:promoted_at]
            if isinstance(e, ev.NodeCreated)
            and e.node.idea == name
            and e.node.stage == AGENDA
            and e.node.kind == "method"
        ]
        assert len(searched) <= (rungs[r - 1].nodes or 0)
    j.log.close()
