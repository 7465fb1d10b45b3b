"""Offline template search: the four stages, replication, aggregation, proposers, failures."""

from __future__ import annotations

import json
from pathlib import Path

from engine import events as ev
from engine.journal import Journal
from engine.node import NodeStatus
from search.template.plan import PLAN
from search.template.proposers import Proposer, canonical
from search.template.spec import Param
from silva.cli.main import main
from tests.helpers import make_config, make_template

STAGES = PLAN.names


def run(tmp_path: Path, **overrides: object) -> Journal:
    tpl = make_template(tmp_path / "tpl", fixed=overrides.pop("fixed", None))  # type: ignore[arg-type]
    assert main(["run", str(make_config(tmp_path, tpl, **overrides))]) in (0, 3, 4)  # any clean ending
    return Journal.open(next((tmp_path / "runs").iterdir()))


def test_four_stages_with_replicates_and_aggregates(tmp_path: Path) -> None:
    j = run(tmp_path)
    assert j.finished is not None and j.finished.reason == "all four stages complete"
    kinds = lambda stage, kind: j.in_stage(stage, kind)  # noqa: E731
    assert len(kinds("preliminary", "baseline")) == 1  # ends at its first good node
    assert len(kinds("hyperparameter", "hyperparameter")) == 3
    assert len(kinds("agenda", "method")) == 2
    assert len(kinds("ablation", "ablation")) == 1
    for stage in STAGES:
        ended = j.stage_ended[("default", stage)]
        best = j.nodes[ended.best_node_id or ""]
        reps = [r for r in j.in_stage(stage, "replication") if r.parent_id == best.id]
        # A speculative replicate of a provisional best that was overtaken stays, unused.
        assert all(r.origin.speculative for r in j.in_stage(stage, "replication") if r.parent_id != best.id)
        assert len(reps) == 2 and all(r.params == best.params for r in reps)
        assert sorted(r.seed or 0 for r in reps) == [1, 2]  # seeds other than the searched one
        agg = j.nodes[ended.aggregate_node_id or ""]
        assert agg.refs == [best.id, *[r.id for r in reps]]
        table = json.loads((j.log.path.parent / agg.artifacts[0]).read_text())
        subject = next(iter(table["groups"].values()))["score"]
        values = [r.metric("score") for r in reps]
        assert None not in values and subject["n"] == 2
        assert abs(subject["mean"] - sum(v for v in values if v is not None) / 2) < 1e-12
        assert (j.log.path.parent / agg.artifacts[1]).read_bytes().startswith(b"\x89PNG")
    # Promotion: each stage's search nodes grow from the previous stage's best.
    hp_best = j.stage_ended[("default", "hyperparameter")].best_node_id
    # The tuning stage's root competed, and its reason counts it (3 tuned + the baseline).
    assert (
        "best of 4 good node(s) on score, its root among them"
        in j.stage_best[("default", "hyperparameter")].reason
    )
    assert all(n.parent_id == hp_best for n in j.in_stage("agenda", "method"))
    assert all(n.params["method"] for n in j.in_stage("agenda", "method"))
    assert not any(n.params["method"] for n in j.in_stage("hyperparameter", "hyperparameter"))
    # Stages overlap: the next stage's search starts before the decided stage's wrap-up ends, and
    # only speculation (grown from a leader while the last nodes run) starts before the decision.
    seq = {e.node.id: e.seq for e in j.log.read(ev.NodeCreated)}
    for earlier, later in zip(STAGES, STAGES[1:]):
        ended_at = j.stage_ended[("default", earlier)].seq
        decided = j.stage_best[("default", earlier)].seq
        assert min(seq[n.id] for n in j.in_stage(later)) < ended_at
        assert all(n.origin.speculative for n in j.in_stage(later) if seq[n.id] < decided)
    ablation = j.in_stage("ablation", "ablation")[0]
    assert ablation.params["ab"] is True and ablation.params["method"] is True


def test_broken_baseline_stops_run_with_reason(tmp_path: Path, capsys) -> None:
    j = run(tmp_path, fixed={"fail": True})
    assert j.finished is not None
    assert (
        j.finished.reason
        == "stopped: stage preliminary found no good node in 2 node(s) (node budget of 2 used)"
    )
    assert all(n.status == NodeStatus.BUGGY and "deliberate failure" in n.reason for n in j)
    assert "found no good node" in capsys.readouterr().out


def test_timeout_is_a_buggy_node(tmp_path: Path) -> None:
    j = run(
        tmp_path,
        fixed={"sleep": 5},
        budgets={"node_timeout_s": 0.5},
        stages={"preliminary": {"max_nodes": 1}},
    )
    (node,) = j.nodes.values()
    assert node.status == NodeStatus.BUGGY and node.reason == "timed out after 0.5 s (per-node timeout)"
    assert node.execution is not None and node.execution.timed_out and node.execution.wall_s < 4


def test_proposers_never_repeat_and_are_deterministic() -> None:
    space = {
        "a": Param(type="choice", values=[1, 2, 3], default=1),
        "b": Param(type="int", low=0, high=2, default=1),
    }
    for kind in ("sobol", "model"):
        p = Proposer(space, seed=7, kind=kind)
        tried: list[dict] = []
        scored: list[tuple[dict, float]] = []
        while batch := p.propose(2, tried, scored):
            tried += batch
            scored += [(s, -abs(s["a"] - 2) - s["b"]) for s in batch]
        keys = [canonical(t) for t in tried]
        assert len(keys) == len(set(keys)) == 9  # the whole grid, each once, then nothing
        assert Proposer(space, seed=7, kind=kind).propose(3, [], []) == Proposer(
            space, seed=7, kind=kind
        ).propose(3, [], [])


def test_model_proposer_moves_toward_the_optimum() -> None:
    space = {
        "x": Param(type="float", low=0.0, high=1.0, default=0.5),
        "y": Param(type="float", low=0.0, high=1.0, default=0.5),
    }
    f = lambda s: -((s["x"] - 0.8) ** 2 + (s["y"] - 0.2) ** 2)  # noqa: E731
    p = Proposer(space, seed=0, kind="model")
    tried = p.propose(6, [], [])
    scored = [(s, f(s)) for s in tried]
    for _ in range(6):
        (s,) = p.propose(1, tried, scored)
        tried.append(s)
        scored.append((s, f(s)))
    best_model = max(v for _, v in scored)
    best_random = max(f(s) for s in Proposer(space, seed=0, kind="sobol").propose(12, [], []))
    assert best_model >= best_random


def test_speculative_work_is_journaled_and_used_when_its_node_wins(tmp_path: Path) -> None:
    # Slots free while a stage's other search nodes still run: they replicate the provisional best
    # and grow the next stage from it.
    j = run(
        tmp_path,
        fixed={"sleep": 0.3},
        search={"speculate": True},
        stages={
            "preliminary": {"max_nodes": 1},
            "hyperparameter": {"max_nodes": 4},
            "agenda": {"max_nodes": 3},
            "ablation": {"max_nodes": 1},
        },
    )
    assert j.finished is not None and j.finished.reason == "all four stages complete"
    speculative = [n for n in j if n.origin.speculative]
    assert {n.kind for n in speculative} >= {"replication"}
    for stage in STAGES:  # the aggregate uses exactly `replicates` replicates of the decided best
        ended = j.stage_ended[("default", stage)]
        agg = j.nodes[ended.aggregate_node_id or ""]
        assert len(agg.refs) == 1 + 2 and all(
            j.nodes[r].parent_id == ended.best_node_id for r in agg.refs[1:]
        )
        root = j.stage_started[("default", stage)].root
        searched = [n for n in j.in_stage(stage) if n.kind not in ("replication", "aggregation")]
        assert len(searched) <= {"preliminary": 1, "hyperparameter": 4, "agenda": 3, "ablation": 1}[stage]
        # Speculative search nodes that stayed are the stage's own: grown from its decided root.
        assert all(n.parent_id == root for n in searched if n.origin.speculative)
    discarded = [n for n in j if n.status.value == "discarded"]
    assert all(n.origin.speculative for n in discarded)
    from silva.config import load_config
    from silva.view.data import SPECULATIVE, forest_data

    run_dir = j.log.path.parent
    data = forest_data(
        run_dir, load_config(run_dir / "config.yaml", check_files=False), j, [], {n: "" for n in j.nodes}, 100
    )
    flagged = {nid for nid, f in zip(data.nodes["id"], data.nodes["f"]) if f & SPECULATIVE}
    assert flagged == {n.id for n in speculative}  # the view marks what the journal records


def test_a_tuning_stage_that_finds_only_worse_settings_hands_its_root_on(tmp_path: Path) -> None:
    """Defaults at the optimum: every tuned setting is worse, so the hyperparameter stage keeps
    its root (the baseline), reuses the baseline's replicates, and the method is tried at the
    defaults rather than at the least bad tuned setting."""
    tpl = make_template(
        tmp_path / "tpl",
        hyperparameters={
            "x": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.3},
            "y": {"type": "choice", "values": [0, 1, 2], "default": 0},
        },
    )
    assert main(["run", str(make_config(tmp_path, tpl))]) == 0
    j = Journal.open(next((tmp_path / "runs").iterdir()))
    (baseline,) = j.in_stage("preliminary", "baseline")
    tuned = j.in_stage("hyperparameter", "hyperparameter")
    assert len(tuned) == 3 and all(n.metric("score") < baseline.metric("score") for n in tuned)  # type: ignore[operator]
    decision = j.stage_best[("default", "hyperparameter")]
    assert decision.node_id == baseline.id
    assert f"its root {baseline.id}, which no node of the stage beat" in decision.reason
    assert not j.in_stage("hyperparameter", "replication")  # the baseline's own replicates serve
    agg = j.nodes[j.stage_ended[("default", "hyperparameter")].aggregate_node_id or ""]
    assert agg.refs == [baseline.id, *[r.id for r in j.in_stage("preliminary", "replication")]]
    first = j.in_stage("agenda", "method")[0]
    assert first.parent_id == baseline.id and first.params == {**baseline.params, "method": True}
