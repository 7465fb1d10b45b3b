"""Silva's own checks of a decided claim, written and run by Silva with no LLM call
(docs/discovery.md, "Silva's own checks"):

- adjustment: for a claim relating x and y, the measured covariates most associated with both on
  train (at most `adjust_covariates`), each adjusted for in turn on held-out; a claim whose effect
  is gone given one of them is `explained` by it, whoever proposed the claim.
- negative controls: the claim's own code re-run on K held-out tables whose outcome column is
  permuted (by whole groups when the run has a `group_column`); how many would have passed the
  held-out gate is the pipeline's empirical false-acceptance rate on that data.

Every check runs in one sandbox execution per claim (`RUNNER` loops over them), on held-out rows,
after the claim's gate has decided; nothing of it reaches a prompt.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field
from scipy import stats

from search.discovery.data import CODE_LEVELS
from search.discovery.evidence import Hypothesis, TestOutcome

CHECK_KINDS = ("adjustment", "control")
MIN_ROWS = 10

# Runs checks/<k>.py on checks/<k>.parquet (as data/data.parquet) for k < argv[1]; each result
# file moves to checks/<k>.json. A check that raises leaves no result; the next one still runs.
RUNNER = """import os, runpy, shutil, sys
os.makedirs("data", exist_ok=True)
for k in range(int(sys.argv[1])):
    shutil.copyfile(f"checks/{k}.parquet", "data/data.parquet")
    if os.path.exists("silva_test.json"):
        os.remove("silva_test.json")
    try:
        runpy.run_path(f"checks/{k}.py", run_name="__main__")
    except BaseException as e:
        print(f"check {k}: {type(e).__name__}: {e}", file=sys.stderr)
    if os.path.exists("silva_test.json"):
        os.replace("silva_test.json", f"checks/{k}.json")
"""


class CheckSpec(BaseModel):
    """One analysis of a check node: its code, and the column to permute first ('' for none)."""

    label: str
    code: str
    permute: str = ""
    seed: int = 0


class CheckResult(BaseModel):
    label: str
    evidence: TestOutcome | None = None
    error: str = Field("", max_length=1000)


def seed_of(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def permuted(df: pd.DataFrame, column: str, seed: int, group_column: str | None) -> pd.DataFrame:
    """`df` with `column`'s relation to every other column destroyed. With a group column, whole
    groups trade values: each group takes a randomly chosen other group's values (cycled to its
    size), so rows of one subject still share an outcome pattern as they did."""
    rng = np.random.default_rng(seed)
    out = df.copy()
    values = df[column].to_numpy()
    if group_column is None:
        out[column] = rng.permutation(values)
        return out
    groups = [np.flatnonzero(m) for m in (df[group_column] == g for g in pd.unique(df[group_column]))]
    donors = rng.permutation(len(groups))
    new = values.copy()
    for rows, donor in zip(groups, donors):
        source = rng.permutation(values[groups[donor]])
        new[rows] = np.resize(source, len(rows))
    out[column] = new
    return out


def _columns_of(h: Hypothesis, columns: list[str]) -> list[str]:
    return [c for c in dict.fromkeys(h.variables) if c in columns]


def control_column(h: Hypothesis, ev: TestOutcome, columns: list[str]) -> str | None:
    """The column a negative control permutes: the outcome of an adjusted test's `pair`, else the
    first of the hypothesis's variables that is a column (the variables its test relates come first)."""
    pair = ev.estimates.get("pair")
    if isinstance(pair, list) and len(pair) == 2 and str(pair[1]) in columns:
        return str(pair[1])
    named = _columns_of(h, columns)
    return named[0] if named else None


def claim_pair(h: Hypothesis, ev: TestOutcome, columns: list[str]) -> tuple[str, str, list[str]] | None:
    """(x, y, already adjusted for) of a claim about one pair of columns; None for any other claim
    (an interaction, a claim on a column the code derived)."""
    if ev.adjusted_for:
        pair = [str(c) for c in ev.estimates.get("pair") or []]
        if len(pair) == 2 and all(c in columns for c in (*pair, *ev.adjusted_for)):
            return pair[0], pair[1], list(ev.adjusted_for)
        return None
    if ev.test == "ols_interaction":
        return None
    named = _columns_of(h, columns)
    return (named[0], named[1], []) if len(named) == 2 else None


def candidate_covariates(
    train: pd.DataFrame, x: str, y: str, skip: list[str], *, alpha: float, limit: int
) -> list[str]:
    """At most `limit` measured covariates associated with both x and y on train (Spearman,
    p <= alpha each), the most associated with the weaker of the two first."""
    numeric = [c for c in (x, y) if pd.api.types.is_numeric_dtype(train[c])]
    if len(numeric) < 2 or limit <= 0:
        return []
    scored = []
    for z in train.columns:
        if z in (x, y, *skip) or not pd.api.types.is_numeric_dtype(train[z]):
            continue
        d = train[[x, y, z]].dropna().astype(float)
        if len(d) < MIN_ROWS or (d.std() == 0).any():
            continue
        zx, zy = stats.spearmanr(d[z], d[x]), stats.spearmanr(d[z], d[y])
        if max(float(zx.pvalue), float(zy.pvalue)) <= alpha:
            scored.append((min(abs(float(zx.statistic)), abs(float(zy.statistic))), z))
    return [z for _, z in sorted(scored, key=lambda s: (-s[0], s[1]))[:limit]]


def _discrete(s: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(s) and s.nunique() <= CODE_LEVELS)


def adjustment_code(train: pd.DataFrame, x: str, y: str, given: list[str]) -> str:
    """Silva's adjusted test of x ~ y given `given`: a stratified G-test for two discrete columns,
    else the partial correlation (silva_stats)."""
    head = "import silva_stats as st\ndf = st.load()\n"
    if _discrete(train[x]) and _discrete(train[y]):
        test = f"st.conditional_independence(df, {x!r}, {y!r}, given={given!r})"
    else:
        test = f"st.partial_correlation(df, {x!r}, {y!r}, covariates={given!r})"
    return head + f"st.record({test}, expected_sign=0)\n"
