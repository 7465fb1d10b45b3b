"""Running an `AnalysisSpec` with Silva's statistical tools, in the worker process.

No generated code runs here: the LLM names a tool and columns, Silva checks them against the
table and calls the tool itself, so the analysis's variables and population are exactly known.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from search.discovery import silva_stats as st
from search.discovery.evidence import TestOutcome
from search.stateful.model import AnalysisSpec, Condition

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
MIN_ROWS = 10


def problems(spec: AnalysisSpec, columns: list[str]) -> str:
    """'' when every column the spec names exists; otherwise what is wrong (shown to the LLM)."""
    named = spec.variables | {c.column for c in spec.population}
    unknown = sorted(named - set(columns))
    if unknown:
        return f"unknown column(s) {unknown}; the columns are {columns}"
    if spec.tool == "stratified" and not spec.strata:
        return "the stratified tool needs `strata`"
    if spec.tool == "interaction" and not spec.moderator:
        return "the interaction tool needs `moderator`"
    if spec.outcome == spec.predictor:
        return "outcome and predictor are the same column"
    return ""


def select(df: pd.DataFrame, population: list[Condition]) -> pd.DataFrame:
    for cond in population:
        value: Any = cond.value
        if pd.api.types.is_numeric_dtype(df[cond.column]) and isinstance(value, str):
            value = float(value)
        df = df[OPS[cond.op](df[cond.column], value)]
    return df


def run_analysis(spec: AnalysisSpec, data_file: Path, expected_sign: int) -> tuple[TestOutcome | None, str]:
    """(evidence, '') or (None, why there is none)."""
    df = pd.read_parquet(data_file)
    problem = problems(spec, list(df.columns))
    if problem:
        return None, problem
    rows = select(df, spec.population)
    if len(rows) < MIN_ROWS:
        return None, f"only {len(rows)} rows in {spec.population}; need {MIN_ROWS}+"
    try:
        if spec.tool == "correlation":
            res = st.correlation(rows, spec.predictor, spec.outcome)
        elif spec.tool == "regression":
            res = st.regression(rows, spec.outcome, spec.predictor, spec.covariates)
        elif spec.tool == "compare_groups":
            res = st.compare_groups(rows, spec.outcome, spec.predictor)
        elif spec.tool == "interaction":
            res = st.interaction(rows, spec.outcome, spec.predictor, spec.moderator, spec.covariates)
        elif spec.tool == "conditional_independence":
            res = st.conditional_independence(rows, spec.predictor, spec.outcome, spec.covariates)
        else:
            res = st.stratified(rows, spec.outcome, spec.predictor, spec.strata)
    except (
        ValueError,
        KeyError,
        TypeError,
        ArithmeticError,
    ) as e:  # the tool's refusal is the evidence's error
        return None, f"{spec.tool}: {str(e)[:300]}"
    return TestOutcome.model_validate({**res, "expected_sign": expected_sign}), ""


def screen(data_file: Path, top: int) -> list[dict[str, Any]]:
    """The `top` strongest pairwise Spearman correlations of the numeric train columns: patterns
    to investigate. Chosen on train, so every claim built on one is confirmed on held-out."""
    df = pd.read_parquet(data_file).select_dtypes("number")
    signed = df.corr(method="spearman").to_numpy()
    rho = np.nan_to_num(np.abs(signed), nan=0.0)
    cols = list(df.columns)
    pairs = sorted(
        (
            (float(rho[i, j]), cols[i], cols[j], float(signed[i, j]))
            for i in range(len(cols))
            for j in range(i + 1, len(cols))
        ),
        reverse=True,
    )[:top]
    return [
        {
            "id": f"p{k + 1}",
            "text": f"{a} and {b} move together (train Spearman rho {r:+.2f})",
            "variables": [a, b],
            "strength": round(r, 4),
        }
        for k, (_, a, b, r) in enumerate(pairs)
    ]
