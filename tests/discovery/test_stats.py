"""The statistical tools hypothesis code calls in the sandbox (search/discovery/silva_stats.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from search.discovery import silva_stats as st
from search.discovery.evidence import TestOutcome as Evidence
from search.discovery.gates import benjamini_hochberg

KEYS = {"test", "effect", "effect_name", "p", "log_p", "n", "assumptions", "estimates"}


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    n = 3000
    z = rng.normal(size=n)
    x = z + rng.normal(size=n)
    y = 0.8 * z + 0.5 * x + rng.normal(size=n)
    return pd.DataFrame(
        {
            "x": x,
            "y": y,
            "z": z,
            "g": (x > 0).astype(int),
            "noise": rng.normal(size=n),
            "f": rng.random(n) < 0.3,
            "s": rng.random(n) < 0.5,
            "c": rng.integers(0, 3, n),
        }
    )


def test_every_tool_returns_the_documented_keys(df: pd.DataFrame) -> None:
    results = [
        st.compare_groups(df, "y", "g"),
        st.compare_groups(df, "y", "g", method="mannwhitney"),
        st.correlation(df, "x", "y"),
        st.correlation(df, "x", "y", "spearman"),
        st.regression(df, "y", "x", ["z", "c"]),
        st.interaction(df, "y", "x", "z"),
        st.stratified(df, "y", "x", "z"),
        st.contingency(df, "f", "s"),
        st.contingency(df, "c", "g"),
        st.enrichment(df, "f", "s"),
    ]
    for r in results:
        assert set(r) == KEYS, r["test"]
        assert math.isfinite(r["log_p"]) and r["log_p"] <= 0 and r["n"] > 0
        assert all(set(c) == {"ok", "detail"} for c in r["assumptions"].values())


def test_log_p_stays_finite_where_p_underflows(df: pd.DataFrame) -> None:
    c = st.correlation(df, "x", "y")
    assert c["p"] == 0.0 and c["log_p"] < -1000  # p below the smallest double; log p still ordered
    r = st.compare_groups(df, "y", "g")
    assert r["log_p"] > c["log_p"] and math.isclose(
        math.exp(r["log_p"]), r["p"], rel_tol=1e-6, abs_tol=1e-300
    )


def test_effects_have_the_right_sign_and_size(df: pd.DataFrame) -> None:
    assert st.compare_groups(df, "y", "g", a=1, b=0)["effect"] > 1.0
    assert st.compare_groups(df, "y", "g", a=0, b=1)["effect"] < -1.0
    assert abs(st.correlation(df, "noise", "y")["effect"]) < 0.06
    adjusted = st.regression(df, "y", "x", ["z"])["effect"]
    assert 0.25 < adjusted < st.correlation(df, "x", "y")["effect"]  # adjusting for the confounder shrinks it


def test_stratified_reanalysis_removes_a_confounded_association() -> None:
    rng = np.random.default_rng(2)
    stratum = rng.integers(0, 3, 2000)
    frame = pd.DataFrame(
        {"a": stratum + rng.normal(0, 0.3, 2000), "b": stratum + rng.normal(0, 0.3, 2000), "k": stratum}
    )
    assert st.correlation(frame, "a", "b")["effect"] > 0.8
    assert abs(st.stratified(frame, "b", "a", "k")["effect"]) < 0.1


def test_record_writes_the_results_file_silva_validates(
    df: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    st.record(st.correlation(df, "x", "y"), expected_sign=1)
    out = Evidence.model_validate(json.loads((tmp_path / st.RESULT_FILE).read_text()))
    assert out.expected_sign == 1 and out.sign == 1 and out.test == "pearson_correlation"


def test_bad_input_is_an_error_the_hypothesis_code_sees(df: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="levels"):
        st.compare_groups(df, "y", "c")
    with pytest.raises(KeyError):
        st.correlation(df, "x", "missing")


def test_benjamini_hochberg_matches_statsmodels() -> None:
    p = np.array([1e-6, 0.001, 0.008, 0.02, 0.03, 0.2, 0.5, 0.9, 0.04, 0.012])
    expected = multipletests(p, alpha=0.05, method="fdr_bh")[0]
    found, _ = benjamini_hochberg({str(i): math.log(v) for i, v in enumerate(p)}, alpha=0.05)
    assert found == {str(i) for i, keep in enumerate(expected) if keep}
    tiny, _ = benjamini_hochberg({"a": -2000.0, "b": -1500.0, "c": -0.1}, alpha=0.05)
    assert tiny == {"a", "b"}  # p-values that underflow to 0.0 still rank


def test_discrete_tools_find_a_chain_conditionally_independent() -> None:
    """a -> c -> b on integer codes: a and b are associated, but not given c (the question PC asks)."""
    rng = np.random.default_rng(3)
    n = 3000
    a = rng.integers(0, 3, n)
    c = np.where(rng.random(n) < 0.7, a % 2, rng.integers(0, 2, n))
    b = np.where(rng.random(n) < 0.7, c, rng.integers(0, 2, n))
    d = pd.DataFrame({"a": a, "b": b, "c": c, "a2": (a > 0).astype(int)})
    marginal = Evidence.model_validate(st.conditional_independence(d, "a", "b"))
    given = Evidence.model_validate(st.conditional_independence(d, "a", "b", given=["c"]))
    assert marginal.test == "g_test" and marginal.p < 1e-10 and marginal.effect_d > 0.2
    assert given.test == "stratified_g_test" and given.p > 0.001 and given.effect_d < 0.2
    assert given.adjusted_for == ["c"] and given.pair == {"a", "b"}
    mh = Evidence.model_validate(st.cmh(d, "a2", "b", given=["c"]))
    assert mh.test == "cmh" and mh.p > 0.001 and abs(mh.effect) < 0.2 and mh.adjusted_for == ["c"]
    assert Evidence.model_validate(st.cmh(d, "c", "b", given=["a2"])).effect > 0.5
    with pytest.raises(ValueError, match="cmh needs two"):
        st.cmh(d, "a", "b", given=["c"])


def test_interaction_reports_the_product_term() -> None:
    rng = np.random.default_rng(4)
    n = 2000
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    d = pd.DataFrame({"x1": x1, "x2": x2, "y": 0.3 * x1 * x2 + rng.normal(size=n)})
    res = Evidence.model_validate(st.interaction(d, "y", "x1", "x2"))
    assert res.test == "ols_interaction" and res.p < 1e-10 and 0.2 < res.effect < 0.4
    assert abs(res.estimates["main_a"]) < 0.1
