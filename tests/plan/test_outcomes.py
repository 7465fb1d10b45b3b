"""`silva plan`: experiments' failures come together per idea, fitted `--from` a run's journal,
and `--replay` gives each planned node its twin's figures (docs/plan.md, "Where the figures come
from")."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from engine.journal import Journal
from engine.node import AttemptResult, ExecSummary, MetricValue, Node
from silva.cli.main import main
from silva.plan import PlanSettings, Source
from tests.plan.forests import forest


def source_run(tmp: Path, outcomes: dict[str, str]) -> Path:
    """A finished run whose ideas' drafts ended as `outcomes` says (`g` good, `b` buggy, one
    letter a draft), each experiment 5 s."""
    run = Journal.open(tmp)
    for idea, statuses in outcomes.items():
        for k, status in enumerate(statuses):
            node_id = f"{idea}-{k}"
            run.add_node(Node(id=node_id, idea=idea, stage="preliminary", kind="draft"))
            run.attempt_started(node_id, 1, "")
            good = status == "g"
            result = AttemptResult(
                status="good" if good else "buggy",
                execution=ExecSummary(exit_code=0 if good else 1, wall_s=5.0),
                metrics=[MetricValue(name="val_accuracy", value=0.5)] if good else [],
                started_at=1.0,
                finished_at=6.0,
            )
            run.attempt_finished(node_id, 1, result)
    run.log.close()
    (tmp / "llm_ledger.jsonl").write_text("")  # the run called no model: default latencies
    return tmp


def plan_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["plan", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_fit_from_a_journal_recovers_each_ideas_good_rate(tmp_path: Path) -> None:
    run = source_run(tmp_path / "run", {"i0": "bbbb", "i1": "gggb", "i2": "gbgb"})
    source = Source(PlanSettings(), Journal.open(run, read_only=True))
    assert source.good_rates() == {"i0": 0.0, "i1": 0.75, "i2": 0.5}
    assert "1 lost every experiment" in source.outcomes()
    # A planned idea is dealt one source idea and fails as it did, whatever its kind of node:
    # the idea like i0 fails every experiment, a debug node included (i0 never made one).
    rng = random.Random(0)
    planned = [Node(id=f"p{k}", idea=f"planned{k}", stage="preliminary", kind="draft") for k in range(3)]
    like = {n.idea: source._like(n.idea, rng) for n in planned}
    assert sorted(str(v) for v in like.values()) == ["i0", "i1", "i2"]  # each source idea once
    bad = next(n for n in planned if like[n.idea] == "i0")
    debug = Node(id="d", idea=bad.idea, stage="preliminary", kind="debug")
    assert all(source.experiment(n.kind, rng, n) == (5.0, True) for n in (bad, debug) for _ in range(20))
    fair = next(n for n in planned if like[n.idea] == "i1")
    draws = [source.experiment("draft", rng, fair)[1] for _ in range(400)]
    assert 0.15 < sum(draws) / len(draws) < 0.35  # i1's one failure in four


def test_a_forest_plan_loses_whole_ideas_as_its_source_run_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two of the run's four ideas lost every draft and stopped; the other two never failed.
    Drawn per node at the pooled rate (half) a plan lost 0 to 4 ideas; per idea, each plan of
    the forest loses exactly two, and says how it drew the failures."""
    cfg = str(forest(tmp_path))
    run = str(source_run(tmp_path / "run", {"i0": "bbbb", "i1": "bbbb", "i2": "gggg", "i3": "gggg"}))
    for seed in range(3):
        r = plan_json(capsys, cfg, "--from", run, "--seed", str(seed))
        assert r["outcome"] == "finished" and r["ideas"] == 4 and r["ideas_lost"] == 2, (seed, r)
        assert r["outcomes"].startswith("per idea: each planned idea fails as one of the source's 4")
    # The good ideas go on past their first stage; the lost ones made their 4 drafts and stopped.
    assert r["nodes_by_kind"]["draft"] >= 8 and "hyperparameter" in r["nodes_by_kind"]


def test_without_a_run_the_share_of_ideas_failing_whole_is_a_stated_assumption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = str(forest(tmp_path, ideas=2))
    settings = tmp_path / "plan.yaml"
    settings.write_text("ideas_failing: 1.0\n")
    r = plan_json(capsys, cfg, "--settings", str(settings))
    assert r["ideas"] == 2 and r["ideas_lost"] == 2 and r["outcomes"].startswith("per idea: 100% of ideas")
    assert "hyperparameter" not in r["nodes_by_kind"]
    capsys.readouterr()
    assert main(["plan", cfg]) == 0
    out = capsys.readouterr().out
    assert "ideas failing whole: 0% (every experiment of such an idea fails" in out
    assert "failures       per attempt, each on its own at its kind's share; 0 of 2 idea(s) lost" in out


def test_settings_failing_default_fail_the_experiment_kinds_they_do_not_name(tmp_path: Path) -> None:
    """`buggy: {default: 1}` fails every experiment kind, as `durations: default` times them (it
    failed none: no kind is called `default`)."""
    source = Source(PlanSettings(buggy={"default": 1.0, "ablation": 0.0}), None)
    rng = random.Random(0)
    assert source.buggy("draft", rng) is True and source.buggy("ablation", rng) is False


def test_replay_is_a_flag_of_silva_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--replay` with `--from`: each planned idea's nodes take its namesake's in the run (i0
    and i2 lost there, so here), not ideas dealt in turn; without `--from` it exits 2."""
    cfg = str(forest(tmp_path))
    run = str(source_run(tmp_path / "run", {"i0": "bbbb", "i1": "gggg", "i2": "bbbb", "i3": "gggg"}))
    r = plan_json(capsys, cfg, "--from", run, "--replay")
    assert r["outcomes"].startswith("replayed") and r["ideas_lost"] == 2
    shares = r["share_by_idea"]
    assert max(shares["i0"], shares["i2"]) < min(shares["i1"], shares["i3"])
    capsys.readouterr()
    assert main(["plan", cfg, "--replay"]) == 2
    assert "--replay replays a run: pass the run directory with --from RUN_DIR" in capsys.readouterr().err
