"""Each gate on hand-made evidence; the bank's pruning by diversity."""

from __future__ import annotations

import math

from search.discovery import gates
from search.discovery.bank import TfidfEmbedder, novelty, prune_max_min
from search.discovery.evidence import TestOutcome as Evidence

KW = {"alpha": 0.05, "min_effect": 0.2}


def ev(effect: float, p: float, n: int = 200) -> Evidence:
    return Evidence(test="t", effect=effect, effect_name="d", p=p, log_p=math.log(p), n=n)


def test_two_split_train_needs_effect_p_and_the_predicted_sign() -> None:
    assert gates.two_split_train(ev(0.5, 0.001), 0, **KW).passed
    small = gates.two_split_train(ev(0.1, 1e-9), 0, **KW)
    assert not small.passed and "effect" in small.reason and small.status == "rejected"
    assert not gates.two_split_train(ev(0.5, 0.2), 0, **KW).passed
    wrong_way = gates.two_split_train(ev(-0.5, 1e-9), 1, **KW)
    assert not wrong_way.passed and "opposite" in wrong_way.reason
    assert wrong_way.numbers["effect"] == -0.5 and wrong_way.numbers["alpha"] == 0.05


def test_two_split_heldout_needs_the_same_sign_and_60_percent_of_the_effect() -> None:
    train = ev(0.5, 1e-6)
    kw = {**KW, "ratio": 0.6}
    assert gates.two_split_heldout(train, ev(0.35, 0.01), 0, **kw).status == "accepted"
    shrunk = gates.two_split_heldout(train, ev(0.25, 0.01), 0, **kw)
    assert shrunk.status == "weakened" and "0.6 x train" in shrunk.reason
    assert gates.two_split_heldout(train, ev(-0.4, 0.001), 0, **kw).status == "refuted"
    assert gates.two_split_heldout(train, ev(0.4, 0.3), 0, **kw).status == "weakened"
    assert gates.confirm_heldout(train, ev(0.4, 0.001), 0, **kw).status == "supported"


def test_bonferroni_divides_alpha_by_the_chain_length_and_keeps_the_best() -> None:
    steps = [("a", ev(0.4, 0.02), 0), ("b", ev(0.5, 0.004), 0), ("c", ev(0.6, 1e-5), 0), ("d", None, 0)]
    best, decisions = gates.bonferroni_chain(
        steps, alpha=0.05, min_effect=0.2, chain_length=4, global_tests=17
    )
    assert best == "c"
    assert [decisions[s].status for s in "abcd"] == ["rejected", "accepted", "accepted", "inconclusive"]
    assert decisions["a"].numbers["threshold"] == 0.0125 and decisions["b"].numbers["global_tests"] == 17
    none, _ = gates.bonferroni_chain(
        [("a", ev(0.4, 0.02), 0)], alpha=0.05, min_effect=0.2, chain_length=4, global_tests=1
    )
    assert none is None


def test_bh_gate_over_the_bank() -> None:
    evidence = {"a": (ev(0.5, 1e-8), 0), "b": (ev(0.05, 1e-8), 0), "c": (ev(0.5, 0.3), 0), "d": (None, 0)}
    out = gates.bh_decisions(evidence, alpha=0.05, min_effect=0.2)
    assert out["a"].status == "accepted" and out["b"].status == "rejected"
    assert out["c"].status == "rejected" and out["d"].status == "inconclusive"
    assert out["a"].numbers["m"] == 3


def test_bank_prunes_to_capacity_keeping_the_most_diverse() -> None:
    ids = ["a", "b", "c", "d", "e"]
    texts = [
        "age raises blood pressure",
        "age raises blood pressure strongly",
        "older age raises blood pressure",
        "coffee relates to sleep quality",
        "income predicts commute length",
    ]
    kept = prune_max_min(ids, texts, 3, TfidfEmbedder(), keep_first="c")
    assert len(kept) == 3 and "c" in kept and {"d", "e"} <= set(kept)
    assert prune_max_min(ids[:2], texts[:2], 3, TfidfEmbedder()) == ["a", "b"]
    near, far = novelty(["age raises blood pressure", "shoe size and income"], texts[:1], TfidfEmbedder())
    assert near < 0.05 and far > 0.9


def test_one_true_effect_gets_one_verdict_whatever_the_tool() -> None:
    """A d = 0.3 group difference measured as d, r and standardized beta: min_effect 0.2 is one
    effect size on one scale (r = 0.15 is d = 0.3), so the three tests agree."""
    import numpy as np
    import pandas as pd

    from search.discovery import silva_stats as st

    rng = np.random.default_rng(7)
    n = 8000
    g = np.repeat([0, 1], n // 2)
    df = pd.DataFrame({"g": g, "y": 0.3 * g + rng.normal(size=n)})
    results = [
        st.compare_groups(df, "y", "g", a=1, b=0),
        st.correlation(df, "g", "y"),
        st.regression(df, "y", "g"),
    ]
    outcomes = [Evidence.model_validate(r) for r in results]
    assert abs(outcomes[1].effect - 0.15) < 0.03  # r: below 0.2 on its own scale
    for o in outcomes:
        assert abs(o.effect_d - 0.3) < 0.06, o
    verdicts = {gates.two_split_train(o, 1, **KW).passed for o in outcomes}
    assert verdicts == {True}
    strict = {gates.two_split_train(o, 1, alpha=0.05, min_effect=0.45).passed for o in outcomes}
    assert strict == {False}


def test_hypothesis_key_ignores_layout_and_comments_not_code_variables_or_sign() -> None:
    from search.discovery.evidence import Hypothesis, hypothesis_key

    def h(code: str, variables: list[str], sign: int = 1) -> Hypothesis:
        return Hypothesis(
            statement="s x", h0="h0 x", h1="h1 x", variables=variables, expected_sign=sign, code=code
        )

    code = 'import silva_stats as st\nst.record(st.correlation(st.load(), "x", "y"), expected_sign=1)\n'
    same = (
        "# again\nimport silva_stats as st\n\n"
        'st.record( st.correlation(st.load(), "x",  "y"), expected_sign=1 )  # same test\n'
    )
    assert hypothesis_key(h(code, ["x", "y"])) == hypothesis_key(h(same, ["y", "x"]))
    assert hypothesis_key(h(code, ["x", "y"])) != hypothesis_key(h(code.replace('"y"', '"z"'), ["x", "y"]))
    assert hypothesis_key(h(code, ["x", "y"])) != hypothesis_key(h(code, ["x", "y", "z"]))
    assert hypothesis_key(h(code, ["x", "y"])) != hypothesis_key(h(code, ["x", "y"], -1))


def test_a_check_that_loses_the_effect_explains_the_claim() -> None:
    check = Evidence(
        test="stratified_fixed_effect",
        effect=0.04,
        effect_name="standardized_beta",
        p=0.3,
        log_p=math.log(0.3),
        n=500,
        estimates={"pair": ["x", "y"], "adjusted_for": ["age"]},
    )
    decision = gates.confound_check("h9", check, alpha=KW["alpha"], min_effect=KW["min_effect"])
    assert decision is not None and decision.status == "explained"
    assert decision.reason.startswith("explained by age: h9 (stratified_fixed_effect)")
    kept = check.model_copy(update={"effect": 0.3, "p": 1e-6, "log_p": math.log(1e-6)})
    assert gates.confound_check("h9", kept, alpha=KW["alpha"], min_effect=KW["min_effect"]) is None
