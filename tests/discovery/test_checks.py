"""Silva's own checks of decided claims (docs/discovery.md, "Silva's own checks"): adjustment for
the measured covariates most associated with a claim's pair, and negative controls on held-out
tables with the outcome permuted. Unit tests of the pieces, then one discovery run whose scripted
analyst proposes an honest claim, a leaking one, two confounded pairs and a check by the wrong
covariate."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml

from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import ScriptedProvider, last_user_text
from search.discovery import gates
from search.discovery import silva_stats as st
from search.discovery.checks import candidate_covariates, claim_pair, control_column, permuted
from search.discovery.claims import Claim, ClaimStore, render_findings
from search.discovery.evidence import Hypothesis
from search.discovery.evidence import TestOutcome as Outcome
from silva import lifecycle
from silva.config import load_config
from writeup.findings import render


def confounded_table(seed: int, n: int = 900) -> pd.DataFrame:
    """exercise -> heart_rate for real; (coffee, cholesterol) confounded by age and (screen_time,
    myopia_score) by urban, with no direct link in either pair; noise unrelated to all."""
    rng = np.random.default_rng(seed)
    age, urban = rng.normal(size=n), rng.normal(size=n)
    exercise = rng.normal(size=n)
    return pd.DataFrame(
        {
            "exercise": exercise.round(3),
            "heart_rate": (-0.5 * exercise + rng.normal(size=n)).round(3),
            "age": age.round(3),
            "coffee": (0.7 * age + rng.normal(size=n)).round(3),
            "cholesterol": (0.7 * age + rng.normal(size=n)).round(3),
            "urban": urban.round(3),
            "screen_time": (0.7 * urban + rng.normal(size=n)).round(3),
            "myopia_score": (0.7 * urban + rng.normal(size=n)).round(3),
            "noise": rng.normal(size=n).round(3),
        }
    )


# -- the pieces ---------------------------------------------------------------------------------
def test_partial_correlation_is_the_adjusted_regression_test_and_symmetric() -> None:
    df = confounded_table(0)
    a = st.partial_correlation(df, "exercise", "heart_rate", ["age"])
    b = st.partial_correlation(df, "heart_rate", "exercise", ["age"])
    reg = st.regression(df, "heart_rate", "exercise", covariates=["age"])
    assert a["log_p"] == pytest.approx(reg["log_p"], rel=1e-9)
    assert a["effect"] == pytest.approx(b["effect"]) and a["effect"] < -0.3
    assert a["estimates"]["adjusted_for"] == ["age"] and a["estimates"]["pair"] == ["exercise", "heart_rate"]
    gone = st.partial_correlation(df, "coffee", "cholesterol", ["age"])
    assert abs(gone["effect"]) < 0.1 < abs(st.correlation(df, "coffee", "cholesterol")["effect"])


def test_candidate_covariates_are_those_associated_with_both() -> None:
    df = confounded_table(1)
    assert candidate_covariates(df, "coffee", "cholesterol", [], alpha=0.05, limit=3) == ["age"]
    assert candidate_covariates(df, "screen_time", "myopia_score", [], alpha=0.05, limit=3) == ["urban"]
    assert candidate_covariates(df, "exercise", "heart_rate", [], alpha=0.05, limit=3) == []
    assert candidate_covariates(df, "coffee", "cholesterol", ["age"], alpha=0.05, limit=3) == []
    assert candidate_covariates(df, "coffee", "cholesterol", [], alpha=0.05, limit=0) == []


def _outcome(res: dict[str, object]) -> Outcome:
    return Outcome.model_validate(res)


def test_claim_pair_and_control_column() -> None:
    df = confounded_table(2)
    cols = list(df.columns)
    h = Hypothesis(
        statement="coffee rises with cholesterol",
        h0="none",
        h1="some",
        variables=["coffee", "cholesterol"],
        code="x" * 10,
    )
    marginal = _outcome(st.correlation(df, "coffee", "cholesterol"))
    assert claim_pair(h, marginal, cols) == ("coffee", "cholesterol", [])
    assert control_column(h, marginal, cols) == "coffee"
    strat = _outcome(st.stratified(df, "cholesterol", "coffee", "noise"))
    hs = h.model_copy(update={"variables": ["coffee", "cholesterol", "noise"]})
    assert claim_pair(hs, strat, cols) == ("coffee", "cholesterol", ["noise"])
    assert control_column(hs, strat, cols) == "cholesterol"  # the adjusted test's outcome
    inter = _outcome(st.interaction(df, "heart_rate", "exercise", "age"))
    assert (
        claim_pair(h.model_copy(update={"variables": ["exercise", "age", "heart_rate"]}), inter, cols) is None
    )


def test_permuted_destroys_the_relation_and_keeps_groups_together() -> None:
    df = confounded_table(3, n=600)
    out = permuted(df, "heart_rate", 5, None)
    assert sorted(out["heart_rate"]) == sorted(df["heart_rate"])
    assert abs(st.correlation(out, "exercise", "heart_rate")["effect"]) < 0.1
    assert out.drop(columns="heart_rate").equals(df.drop(columns="heart_rate"))
    # Subjects of 4 rows each: a group takes another group's four values, in some order.
    df["subject"] = np.repeat(np.arange(150), 4)
    grouped = permuted(df, "heart_rate", 5, "subject")
    before = {frozenset(g) for g in df.groupby("subject")["heart_rate"].apply(tuple)}
    after = grouped.groupby("subject")["heart_rate"].apply(tuple)
    assert all(frozenset(g) in before for g in after)
    assert (after.map(frozenset) != df.groupby("subject")["heart_rate"].apply(frozenset)).mean() > 0.9


def test_negative_controls_flag_only_improbable_pass_counts() -> None:
    assert gates.negative_controls("y", 0, 20, alpha=0.05) is None
    assert gates.negative_controls("y", 3, 20, alpha=0.05) is None  # P(>= 3) = 0.075
    flagged = gates.negative_controls("y", 4, 20, alpha=0.05)  # P(>= 4) = 0.016
    assert flagged is not None and flagged.status == "spurious" and "4 of 20" in flagged.reason
    assert gates.binomial_tail(4, 20, 0.05) == pytest.approx(0.0159, abs=1e-4)
    assert math.isclose(gates.binomial_tail(0, 20, 0.05), 1.0)


# -- one run ------------------------------------------------------------------------------------
HEAD = "import silva_stats as st\ndf = st.load()\n"
LEAK = (
    HEAD + 'df["high_rate"] = (df["heart_rate"] > df["heart_rate"].median()).astype(int)\n'
    'st.record(st.compare_groups(df, "heart_rate", "high_rate", a=1, b=0), expected_sign=1)\n'
)
PROPOSALS = [
    (
        "exercise lowers the heart rate",
        ["exercise", "heart_rate"],
        HEAD + 'st.record(st.correlation(df, "exercise", "heart_rate"), expected_sign=-1)\n',
    ),
    ("noise marks a high heart rate", ["heart_rate", "noise"], LEAK),
    (
        "coffee goes with cholesterol",
        ["coffee", "cholesterol"],
        HEAD + 'st.record(st.correlation(df, "coffee", "cholesterol"))\n',
    ),
    (
        "screen time goes with myopia",
        ["screen_time", "myopia_score"],
        HEAD + 'st.record(st.correlation(df, "screen_time", "myopia_score"))\n',
    ),
    # The analyst's own check, by the wrong covariate: it keeps the effect, and demotes nothing.
    (
        "coffee goes with cholesterol within noise strata",
        ["coffee", "cholesterol", "noise"],
        HEAD + 'st.record(st.stratified(df, "cholesterol", "coffee", "noise"))\n',
    ),
]


def analyst(call: ProviderCall) -> str:
    prompt = last_user_text(call.messages)
    k = int(prompt.split("Proposal #")[1].split()[0])
    statement, variables, code = PROPOSALS[k - 1]
    return json.dumps(
        {
            "statement": statement,
            "h0": "no association",
            "h1": statement,
            "variables": variables,
            "code": code,
        }
    )


@pytest.fixture(scope="module")
def claims(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Claim]:
    root = tmp_path_factory.mktemp("checks")
    confounded_table(7).to_csv(root / "table.csv", index=False)
    cfg = {
        "name": "checks",
        "output_dir": str(root / "runs"),
        "seed": 1,
        "discovery": {"data": str(root / "table.csv"), "max_hypotheses": len(PROPOSALS), "reflect_every": 50},
        "budgets": {"wall_clock_s": 600, "node_timeout_s": 60},
        "executor": {"kind": "inprocess", "max_in_flight": 2},
        "sandbox": "none",
        "llm": {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {"analyst": {"provider": "offline", "model": "scripted-analyst"}},
            "roles": {"code": {"model": "analyst"}, "feedback": {"model": "analyst"}},
        },
    }
    (root / "run.yaml").write_text(yaml.safe_dump(cfg))
    config = load_config(root / "run.yaml")
    run_dir, journal = lifecycle.create_run(config)
    outcome = lifecycle.execute(
        config, journal, providers={"offline": ScriptedProvider("offline", fn=analyst)}
    )
    journal.log.close()
    assert outcome.status == "finished", outcome.message
    return {c.statement: c for c in ClaimStore(run_dir).load()}


def test_leaking_claim_is_spurious_and_honest_claim_controls_pass_rarely(claims: dict[str, Claim]) -> None:
    leak = claims["noise marks a high heart rate"]
    assert leak.status == "spurious" and leak.controls == 20 and leak.controls_passed >= 18, leak
    assert "'heart_rate' permuted" in leak.reason
    honest = claims["exercise lowers the heart rate"]
    assert honest.status == "accepted" and honest.controls == 20 and honest.controls_passed <= 1, honest
    assert honest.covariates_checked == []  # nothing measured goes with both exercise and heart rate


def test_both_confounded_pairs_end_explained_by_their_confounder(claims: dict[str, Claim]) -> None:
    for statement, confounder in (
        ("coffee goes with cholesterol", "age"),
        ("screen time goes with myopia", "urban"),
    ):
        c = claims[statement]
        assert c.status == "explained" and c.reason.startswith(
            f"explained by {confounder}: Silva's adjustment"
        ), c
        assert c.covariates_checked[0] == confounder
        assert c.controls == 0  # explained first: no controls spent on it
    wrong = claims["coffee goes with cholesterol within noise strata"]
    assert wrong.parent == claims["coffee goes with cholesterol"].id
    assert wrong.status == "explained" and wrong.reason.startswith("explained by age"), wrong


def test_findings_and_paper_report_the_controls(claims: dict[str, Claim]) -> None:
    leak, honest = claims["noise marks a high heart rate"], claims["exercise lowers the heart rate"]
    runs, passed = leak.controls + honest.controls, leak.controls_passed + honest.controls_passed
    text = render_findings(list(claims.values()), {"alpha": 0.05, "split": {}})
    controls = text.split("## Negative controls")[1].split("##")[0]
    assert f"{passed} of {runs} controls would have passed" in controls
    assert f"({leak.id}): {leak.controls_passed} of 20 passed — spurious" in controls
    assert f"({leak.id}) — spurious: " in text.split("## Demoted claims")[1].split("##")[0]
    tex = render(list(claims.values()), {"alpha": 0.05, "gate": "two_split", "split": {}})
    section = tex.split(r"\section{Negative controls}")[1].split(r"\section")[0]
    assert f"{passed} of {runs} controls passed" in section
    assert f"{leak.controls_passed} of 20 passed (spurious)" in section
