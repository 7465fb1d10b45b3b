"""StatefulDiscovery: frontier actions change the journaled state and a resume restores it;
local adjudication on hand-made evidence; the scope checker; the ablation switches."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from engine import events as ev
from engine.journal import Journal
from search.discovery.benchmarks import null_table, planted_table
from search.discovery.evidence import TestOutcome as Result
from search.stateful.adjudicate import Thresholds, adjudicate, adjudicate_naively, scope_problems
from search.stateful.config import StatefulConfig
from search.stateful.model import AnalysisSpec, Claim, Condition, Evidence, Investigation, State
from search.stateful.strategy import StatefulDiscovery
from search.stateful.view import frontier
from tests.stateful.helpers import open_run, run

T = Thresholds()


def result(effect: float, p: float, n: int = 300) -> Result:
    return Result(test="pearson_correlation", effect=effect, effect_name="r", p=p, log_p=math.log(p), n=n)


def evidence(
    eid: str,
    effect: float,
    p: float,
    *,
    split: str = "train",
    role: str = "primary",
    covariates: tuple[str, ...] = (),
    population: tuple[Condition, ...] = (),
) -> Evidence:
    spec = AnalysisSpec(
        tool="regression" if covariates else "correlation",
        outcome="y",
        predictor="x",
        covariates=list(covariates),
        population=list(population),
    )
    return Evidence(
        id=eid,
        node_id="n0",
        split=split,
        role=role,
        analysis=spec,
        result=result(effect, p),
    )


def inv(*ev: Evidence, claim: Claim | None = None) -> Investigation:
    return Investigation(
        id="i1",
        claim=claim or Claim(statement="x raises y", variables=["x", "y"], expected_sign=1),
        evidence=list(ev),
    )


def test_adjudication_on_hand_made_evidence() -> None:
    train, held = evidence("e1", 0.4, 1e-8), evidence("h1", 0.35, 1e-4, split="heldout")
    assert adjudicate(inv(), T).verdict == "inconclusive"
    pending = adjudicate(inv(train), T)
    assert pending.verdict == "inconclusive" and pending.awaiting_heldout
    assert adjudicate(inv(train, held), T).verdict == "supported"
    weak = adjudicate(inv(train, evidence("h1", 0.05, 0.4, split="heldout")), T)
    assert weak.verdict == "weakened" and "held-out" in weak.reason
    assert adjudicate(inv(train, evidence("h1", -0.3, 1e-3, split="heldout")), T).verdict == "refuted"
    assert adjudicate(inv(evidence("e1", -0.4, 1e-8)), T).verdict == "refuted"  # claimed +, significant -
    assert adjudicate(inv(evidence("e1", 0.05, 0.5)), T).verdict == "inconclusive"
    lost = evidence("e2", 0.02, 0.7, role="robustness", covariates=("z",))
    assert adjudicate(inv(train, lost), T).verdict == "weakened"
    assert adjudicate(inv(train, lost, held), T).verdict == "weakened"
    kept = evidence("e2", 0.3, 1e-5, role="robustness", covariates=("z",))
    assert adjudicate(inv(train, kept, held), T).verdict == "supported"


def test_scope_checker_catches_an_over_reaching_claim() -> None:
    subgroup = (Condition(column="g", op="==", value=1),)
    train = evidence("e1", 0.4, 1e-8, population=subgroup)
    held = evidence("h1", 0.4, 1e-6, split="heldout", population=subgroup)
    broad = Claim(statement="x raises y in everyone", variables=["x", "y"], expected_sign=1)
    problems = scope_problems(broad, train)
    assert problems == ["claim is about all rows but e1 analysed g == 1"]
    judged = adjudicate(inv(train, held, claim=broad), T)
    assert judged.verdict == "inconclusive" and "over-reach" in judged.reason
    honest = broad.model_copy(update={"population": list(subgroup)})
    assert adjudicate(inv(train, held, claim=honest), T).verdict == "supported"
    extra = Claim(statement="x raises y independently of z", variables=["x", "y", "z"], expected_sign=1)
    assert scope_problems(extra, evidence("e1", 0.4, 1e-8)) == ["claim names ['z'], which e1 did not analyse"]
    assert scope_problems(extra, evidence("e2", 0.4, 1e-8, covariates=("z",))) == []
    # Without structured claims there is nothing to compare: the check is off.
    assert adjudicate(inv(train, held, claim=broad), T, check_scope=False).verdict == "supported"
    assert adjudicate_naively(inv(train, claim=broad), T).verdict == "supported"


def test_frontier_actions_update_the_journaled_state_and_resume_restores_it(tmp_path: Path) -> None:
    outcome, strategy = run(tmp_path, planted_table(0), max_nodes=6)
    assert outcome.status == "budget"
    before = strategy.state
    assert before.patterns and before.investigations and len(before.steps) >= 4
    assert {s["action"]["action"] for s in before.steps} >= {"create", "retire"}
    replayed = State.replay(Journal.open(tmp_path).log.read(ev.StatefulOp))
    assert replayed.investigations == before.investigations and replayed.focus == before.focus
    assert replayed.applied == before.applied and replayed.steps == before.steps
    ops = [e.op for e in Journal.open(tmp_path).log.read(ev.StatefulOp)]
    assert ops[0] == "screen" and "step" in ops

    journal, resumed = open_run(tmp_path)  # a fresh driver: state from the journal only
    assert resumed.state.investigations == before.investigations
    from engine.dispatch import Dispatcher
    from engine.executor import InProcessExecutor
    from tests.stateful.helpers import Settings

    assert Dispatcher(Settings(), journal, resumed, InProcessExecutor(2)).run().status == "finished"
    final = resumed.state
    assert set(before.investigations) <= set(final.investigations) and final.finalized
    steps = [s["node_id"] for s in final.steps]
    assert len(steps) == len(set(steps))  # no step applied twice
    verdicts = {
        i.claim.variables[0] + "~" + i.claim.variables[1]: resumed.judge(i).verdict
        for i in final.investigations.values()
    }
    assert verdicts["exercise_hours~resting_heart_rate"] == "supported"
    assert verdicts["coffee_cups~cholesterol"] == "weakened"  # the age-adjusted analysis loses it
    assert any(resumed.judge(i).scope_problems for i in final.investigations.values())


def test_an_action_off_the_frontier_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    import json

    def rogue(call: object) -> str:
        return json.dumps({"action": "retire", "investigation": "i9", "justification": "no such thing"})

    journal, strategy = open_run(tmp_path, planted_table(0), fn=rogue, max_steps=2)
    from engine.dispatch import Dispatcher
    from engine.executor import InProcessExecutor
    from tests.stateful.helpers import Settings

    assert Dispatcher(Settings(), journal, strategy, InProcessExecutor(1)).run().status == "finished"
    assert [s["accepted"] for s in strategy.state.steps] == [False, False]
    assert "not on the frontier" in strategy.state.steps[0]["reason"]
    assert strategy.state.investigations == {}
    assert frontier(strategy.state, StatefulConfig()) == [("create", ""), ("stop", "")]


def verdicts(strategy: StatefulDiscovery) -> dict[str, str]:
    return {
        "~".join(i.claim.variables): strategy.judge(i).verdict for i in strategy.state.investigations.values()
    }


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> StatefulDiscovery:
    return run(tmp_path_factory.mktemp("full"), planted_table(0))[1]


@pytest.mark.parametrize("switch", ["local_adjudication", "frontier_control"])
def test_without_local_adjudication_or_frontier_the_confounded_claim_is_supported(
    tmp_path: Path, switch: str, full_run: StatefulDiscovery
) -> None:
    assert verdicts(full_run)["coffee_cups~cholesterol"] == "weakened"
    ablated = verdicts(run(tmp_path, planted_table(0), **{switch: False})[1])
    assert ablated["coffee_cups~cholesterol"] == "supported"


def test_without_structured_hypotheses_over_reach_goes_unchecked(
    tmp_path: Path, full_run: StatefulDiscovery
) -> None:
    over = {k: v for k, v in verdicts(full_run).items() if k.count("~") > 1}
    assert over and set(over.values()) == {"inconclusive"}
    ablated = verdicts(run(tmp_path, planted_table(0), structured_hypotheses=False)[1])
    assert any(ablated[k] != "inconclusive" for k in over)


def test_null_table_gives_no_supported_claim(tmp_path: Path) -> None:
    _, strategy = run(tmp_path, null_table(planted_table(1), 1))
    assert strategy.verdict_counts()["supported"] == 0


@pytest.mark.e2e
def test_silva_discover_mode_stateful_runs_offline(tmp_path: Path) -> None:
    import json

    from silva.cli.main import main

    data = tmp_path / "health.csv"
    planted_table(2).to_csv(data, index=False)
    assert main(["discover", str(data), "--mode", "stateful", "--output-dir", str(tmp_path / "runs")]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    claims = json.loads((run_dir / "stateful" / "claims.json").read_text())
    assert claims["counts"]["supported"] >= 3 and claims["patterns"]
    assert all(c["verdict"] in ("supported", "weakened", "refuted", "inconclusive") for c in claims["claims"])
    assert Journal.open(run_dir).finished is not None


def test_refuting_takes_an_opposite_effect_at_least_the_effect_floor() -> None:
    """r = -0.066 (d = -0.13) at p = 0.015 contradicts a claimed + effect, but is below the floor:
    it weakens or leaves the claim open; r = -0.3 (d = -0.63) refutes it."""
    train, held = evidence("e1", 0.4, 1e-8), evidence("h1", 0.35, 1e-4, split="heldout")
    tiny_held = adjudicate(inv(train, evidence("h1", -0.066, 0.015, split="heldout")), T)
    assert tiny_held.verdict == "weakened"
    tiny_check = adjudicate(inv(train, evidence("e2", -0.066, 0.015, role="robustness"), held), T)
    assert tiny_check.verdict == "weakened" and "below the effect floor" in tiny_check.reason
    assert adjudicate(inv(evidence("e1", -0.066, 0.015)), T).verdict == "inconclusive"
    assert adjudicate(inv(train, evidence("h1", -0.3, 1e-3, split="heldout")), T).verdict == "refuted"


def test_interaction_and_discrete_tools_are_analyses_of_the_stateful_mode(tmp_path: Path) -> None:
    import numpy as np
    import pandas as pd

    from search.stateful.analysis import run_analysis

    rng = np.random.default_rng(5)
    n = 1500
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    a = rng.integers(0, 3, n)
    c = np.where(rng.random(n) < 0.8, a % 2, 0)
    data = tmp_path / "d.parquet"
    pd.DataFrame(
        {"x1": x1, "x2": x2, "y": 0.4 * x1 * x2 + rng.normal(size=n), "a": a, "c": c, "b": c}
    ).to_parquet(data)
    spec = AnalysisSpec(tool="interaction", outcome="y", predictor="x1", moderator="x2")
    res, err = run_analysis(spec, data, 1)
    assert not err and res is not None and res.test == "ols_interaction" and res.effect > 0.3
    assert spec.variables == {"y", "x1", "x2"}
    ci = AnalysisSpec(tool="conditional_independence", outcome="b", predictor="a", covariates=["c"])
    res, err = run_analysis(ci, data, 0)
    assert not err and res is not None and res.test == "stratified_g_test" and res.p > 0.05
    missing = AnalysisSpec(tool="interaction", outcome="y", predictor="x1")
    assert run_analysis(missing, data, 0) == (None, "the interaction tool needs `moderator`")
