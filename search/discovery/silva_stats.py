"""Silva's statistical tools for hypothesis code (copied into every discovery attempt's workspace).

Hypothesis code runs in the sandbox and does:

    import silva_stats as st
    df = st.load()                                   # this attempt's split: never both
    res = st.compare_groups(df, "blood_pressure", "smoker", a=1, b=0)
    st.record(res, expected_sign=+1)                 # writes silva_test.json; printed text is ignored

Every test returns a dict with the same keys:
    test         name of the test
    effect       standardized effect (Cohen's d, r, standardized beta, Cramér's V or an
                 equivalent), signed where a direction exists
    effect_name  which standardized effect it is
    p            two-sided p-value (may underflow to 0.0)
    log_p        natural log of p, computed from log survival functions so that it stays
                 finite where p underflows
    n            rows used (after dropping missing values)
    assumptions  {name: {"ok": bool, "detail": str}}: the checks the test relies on
    estimates    test-specific numbers (group means, raw coefficients, per-stratum effects);
                 an adjusted or stratified test also names its `pair` [predictor, outcome] and
                 what it is `adjusted_for`, so Silva can link it to the claim it checks
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pandas as pd
from scipy import special, stats

DATA_FILE = "data/data.parquet"
RESULT_FILE = "silva_test.json"
MIN_GROUP = 3
SHAPIRO_MAX = 5000  # Shapiro-Wilk is defined up to 5000 observations: a sample beyond that


def load() -> pd.DataFrame:
    """The rows of this attempt's split (train during search, held-out in the one confirmation)."""
    return pd.read_parquet(DATA_FILE)


def _result(test, effect, effect_name, p, log_p, n, assumptions, **estimates):
    return {
        "test": test,
        "effect": float(effect),
        "effect_name": effect_name,
        "p": float(p),
        "log_p": float(log_p),
        "n": int(n),
        "assumptions": assumptions,
        "estimates": {k: _plain(v) for k, v in estimates.items()},
    }


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(float(v)) else None
    return v


def _check(ok, detail):
    return {"ok": bool(ok), "detail": str(detail)}


def _t_logsf(t, df):
    """log P(T > t). scipy's logsf returns -inf far in the tail (t = 60, df = 4000); there the
    tail is the regularized incomplete beta I_x(df/2, 1/2) / 2 with x = df / (df + t^2), summed
    from its hypergeometric series, which converges fast for the small x of a far tail."""
    out = float(stats.t.logsf(t, df))
    if math.isfinite(out) or t <= 0:
        return out
    x, a, b = df / (df + t * t), df / 2.0, 0.5
    total, term = 1.0, 1.0
    for k in range(10_000):
        term *= (a + b + k) / (a + 1 + k) * x
        total += term
        if term < 1e-17 * total:
            break
    return (
        a * math.log(x)
        + b * math.log1p(-x)
        - math.log(a)
        - float(special.betaln(a, b))
        + math.log(total)
        - math.log(2.0)
    )


def _two_sided_t(t, df):
    """p and log p, two-sided, of a t statistic."""
    log_p = math.log(2.0) + _t_logsf(abs(t), df)
    return math.exp(log_p), min(log_p, 0.0)


def _two_sided_z(z):
    log_p = math.log(2.0) + float(stats.norm.logsf(abs(z)))
    return math.exp(log_p), min(log_p, 0.0)


def _normality(x, label):
    x = np.asarray(x, dtype=float)
    if len(x) < 8:
        return _check(False, f"{label}: too few values ({len(x)}) to check normality")
    sample = x if len(x) <= SHAPIRO_MAX else np.random.default_rng(0).choice(x, SHAPIRO_MAX, replace=False)
    p = float(stats.shapiro(sample).pvalue)
    # With thousands of rows every real distribution "fails"; the t-test is then robust anyway.
    return _check(p > 0.01 or len(x) >= 200, f"{label}: Shapiro-Wilk p={p:.3g}, n={len(x)}")


def _two_groups(df, outcome, group, a, b):
    d = df[[outcome, group]].dropna()
    levels = list(pd.unique(d[group]))
    if a is None or b is None:
        if len(levels) != 2:
            raise ValueError(f"{group!r} has {len(levels)} levels {levels[:6]}; pass a= and b=")
        a, b = sorted(levels, key=str)[::-1]
    x = d.loc[d[group] == a, outcome].astype(float).to_numpy()
    y = d.loc[d[group] == b, outcome].astype(float).to_numpy()
    if len(x) < MIN_GROUP or len(y) < MIN_GROUP:
        raise ValueError(f"groups {a!r} (n={len(x)}) and {b!r} (n={len(y)}) need {MIN_GROUP}+ rows each")
    return x, y, a, b


def compare_groups(df, outcome, group, a=None, b=None, method="welch"):
    """Group `a` minus group `b` on `outcome`. method: welch (t-test) or mannwhitney.

    Effect: Cohen's d (pooled SD) for welch; for mannwhitney the rank-biserial correlation
    converted to d (d = 2r / sqrt(1 - r^2)) so that thresholds mean the same for both."""
    x, y, a, b = _two_groups(df, outcome, group, a, b)
    n1, n2 = len(x), len(y)
    checks = {
        "normality_a": _normality(x, f"{group}={a}"),
        "normality_b": _normality(y, f"{group}={b}"),
        "min_group_size": _check(min(n1, n2) >= 20, f"group sizes {n1} and {n2}"),
    }
    if method == "welch":
        return _welch(x, y, a, b, checks)
    if method == "mannwhitney":
        return _mann_whitney(x, y, a, b, checks)
    raise ValueError(f"method {method!r}: use 'welch' or 'mannwhitney'")


def _welch(x, y, a, b, checks):
    """Welch's t-test of x against y, with Cohen's d (pooled SD) as the effect."""
    n1, n2 = len(x), len(y)
    pooled = math.sqrt(((n1 - 1) * x.var(ddof=1) + (n2 - 1) * y.var(ddof=1)) / (n1 + n2 - 2))
    d = (x.mean() - y.mean()) / pooled if pooled > 0 else 0.0
    t = stats.ttest_ind(x, y, equal_var=False)
    v1, v2 = x.var(ddof=1) / n1, y.var(ddof=1) / n2
    dof = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1)) if v1 + v2 > 0 else n1 + n2 - 2
    p, log_p = _two_sided_t(float(t.statistic), dof) if np.isfinite(t.statistic) else (1.0, 0.0)
    lev = stats.levene(x, y)
    checks["equal_variance"] = _check(
        True, f"Welch's t does not assume it (Levene p={float(lev.pvalue):.3g})"
    )
    return _result(
        "welch_t",
        d,
        "cohens_d",
        p,
        log_p,
        n1 + n2,
        checks,
        mean_a=x.mean(),
        mean_b=y.mean(),
        group_a=str(a),
        group_b=str(b),
        t=float(t.statistic),
        df=dof,
    )


def _mann_whitney(x, y, a, b, checks):
    """Mann-Whitney U of x against y (tie-corrected normal approximation), effect as d."""
    n1, n2 = len(x), len(y)
    u = stats.mannwhitneyu(x, y, alternative="two-sided")
    r = 2.0 * float(u.statistic) / (n1 * n2) - 1.0  # rank-biserial, positive when a > b
    ranks = stats.rankdata(np.concatenate([x, y]))
    _, ties = np.unique(ranks, return_counts=True)
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n1 + n2 + 1) - (ties**3 - ties).sum() / ((n1 + n2) * (n1 + n2 - 1))))
    z = (float(u.statistic) - n1 * n2 / 2.0) / sigma if sigma > 0 else 0.0
    p, log_p = _two_sided_z(z)
    r = max(min(r, 0.999999), -0.999999)
    checks["distribution_free"] = _check(True, "rank test: no normality needed (normal approximation for p)")
    return _result(
        "mann_whitney_u",
        2 * r / math.sqrt(1 - r * r),
        "d_from_rank_biserial",
        p,
        log_p,
        n1 + n2,
        checks,
        rank_biserial=r,
        median_a=float(np.median(x)),
        median_b=float(np.median(y)),
        group_a=str(a),
        group_b=str(b),
        z=z,
    )


def correlation(df, x, y, method="pearson"):
    """Correlation of two columns. Effect: r (pearson) or rho (spearman)."""
    d = df[[x, y]].dropna().astype(float)
    n = len(d)
    if n < 4:
        raise ValueError(f"correlation needs 4+ complete rows, got {n}")
    if method == "pearson":
        r = float(stats.pearsonr(d[x], d[y]).statistic)
    elif method == "spearman":
        r = float(stats.spearmanr(d[x], d[y]).statistic)
    else:
        raise ValueError(f"method {method!r}: use 'pearson' or 'spearman'")
    r = 0.0 if not math.isfinite(r) else max(min(r, 0.999999999), -0.999999999)
    t = r * math.sqrt((n - 2) / (1 - r * r))
    p, log_p = _two_sided_t(t, n - 2)
    checks = {"n": _check(n >= 30, f"n={n}")}
    if method == "pearson":
        checks["normality_x"] = _normality(d[x], x)
        checks["normality_y"] = _normality(d[y], y)
    return _result(f"{method}_correlation", r, "r", p, log_p, n, checks, t=t)


def _standardize(d, cols):
    out = d.copy()
    for c in cols:
        sd = out[c].std(ddof=1)
        out[c] = (out[c] - out[c].mean()) / sd if sd > 0 else 0.0
    return out


def _ols(d, formula, term):
    import statsmodels.formula.api as smf
    from statsmodels.stats.diagnostic import het_breuschpagan
    from statsmodels.stats.stattools import jarque_bera

    fit = smf.ols(formula, data=d).fit()
    if term not in fit.params:
        raise ValueError(f"term {term!r} not in the model (terms: {list(fit.params.index)})")
    t = float(fit.tvalues[term])
    p, log_p = _two_sided_t(t, float(fit.df_resid)) if math.isfinite(t) else (1.0, 0.0)
    jb_p = float(jarque_bera(fit.resid)[1])
    bp_p = float(het_breuschpagan(fit.resid, fit.model.exog)[1]) if fit.model.exog.shape[1] > 1 else 1.0
    checks = {
        "residual_normality": _check(jb_p > 0.01 or fit.nobs >= 200, f"Jarque-Bera p={jb_p:.3g}"),
        "homoscedasticity": _check(bp_p > 0.01, f"Breusch-Pagan p={bp_p:.3g}"),
        "rows_per_term": _check(
            fit.nobs >= 10 * len(fit.params), f"n={int(fit.nobs)}, terms={len(fit.params)}"
        ),
    }
    return fit, t, p, log_p, checks


def _q(name):
    return f"Q('{name}')"


def regression(df, outcome, predictor, covariates=()):
    """OLS of outcome on predictor adjusting for covariates (numeric or categorical).

    Effect: the standardized coefficient of predictor (outcome and numeric columns z-scored)."""
    cols = [outcome, predictor, *covariates]
    d = df[cols].dropna()
    numeric = [c for c in cols if pd.api.types.is_numeric_dtype(d[c])]
    if predictor not in numeric or outcome not in numeric:
        raise ValueError("outcome and predictor must be numeric (encode a binary group as 0/1)")
    z = _standardize(d.astype({c: float for c in numeric}), numeric)
    rhs = [_q(predictor)] + [_q(c) if c in numeric else f"C({_q(c)})" for c in covariates]
    fit, t, p, log_p, checks = _ols(z, f"{_q(outcome)} ~ " + " + ".join(rhs), _q(predictor))
    beta = float(fit.params[_q(predictor)])
    return _result(
        "ols_regression",
        beta,
        "standardized_beta",
        p,
        log_p,
        len(d),
        checks,
        covariates=list(covariates),
        pair=[predictor, outcome],
        adjusted_for=list(covariates),
        t=t,
        r_squared=float(fit.rsquared),
    )


def partial_correlation(df, x, y, covariates):
    """Correlation of x and y given covariates: Pearson r of their residuals after least squares on
    the covariates (categorical ones as dummies). Its t-test is the test of x in y ~ x + covariates,
    and r is the same whichever of x and y is called the outcome. Effect: the partial r."""
    covariates = list(covariates)
    d = df[[x, y, *covariates]].dropna()
    for c in (x, y):
        if not pd.api.types.is_numeric_dtype(d[c]):
            raise ValueError(f"{c!r} must be numeric (encode a binary group as 0/1)")
    design = (
        pd.get_dummies(d[covariates], drop_first=True, dtype=float).to_numpy(dtype=float)
        if covariates
        else np.empty((len(d), 0))
    )
    basis = np.column_stack([np.ones(len(d)), design])
    dof = len(d) - 2 - design.shape[1]
    if dof < 2:
        raise ValueError(
            f"partial_correlation needs more rows than terms: n={len(d)}, terms={basis.shape[1]}"
        )

    def residual(v):
        return v - basis @ np.linalg.lstsq(basis, v, rcond=None)[0]

    rx, ry = residual(d[x].to_numpy(dtype=float)), residual(d[y].to_numpy(dtype=float))
    sx, sy = float(np.linalg.norm(rx)), float(np.linalg.norm(ry))
    r = float(rx @ ry) / (sx * sy) if sx > 1e-12 and sy > 1e-12 else 0.0
    r = max(min(r, 0.999999999), -0.999999999)
    t = r * math.sqrt(dof / (1 - r * r))
    p, log_p = _two_sided_t(t, dof)
    checks = {
        "rows_per_term": _check(len(d) >= 10 * basis.shape[1], f"n={len(d)}, terms={basis.shape[1] + 1}")
    }
    return _result(
        "partial_correlation", r, "r", p, log_p, len(d), checks, pair=[x, y], adjusted_for=covariates, t=t
    )


def interaction(df, outcome, a, b, covariates=()):
    """Whether the effect of a on outcome depends on b: the a:b term of OLS outcome ~ a*b + covariates.

    Effect: the standardized interaction coefficient."""
    cols = [outcome, a, b, *covariates]
    d = df[cols].dropna()
    numeric = [c for c in cols if pd.api.types.is_numeric_dtype(d[c])]
    for c in (outcome, a, b):
        if c not in numeric:
            raise ValueError(f"{c!r} must be numeric (encode a binary group as 0/1)")
    z = _standardize(d.astype({c: float for c in numeric}), numeric)
    rhs = [f"{_q(a)} * {_q(b)}"] + [_q(c) if c in numeric else f"C({_q(c)})" for c in covariates]
    term = f"{_q(a)}:{_q(b)}"
    fit, t, p, log_p, checks = _ols(z, f"{_q(outcome)} ~ " + " + ".join(rhs), term)
    return _result(
        "ols_interaction",
        float(fit.params[term]),
        "standardized_beta",
        p,
        log_p,
        len(d),
        checks,
        main_a=float(fit.params[_q(a)]),
        main_b=float(fit.params[_q(b)]),
        t=t,
    )


def stratified(df, outcome, predictor, strata):
    """Re-analysis within strata of a (categorical or binned) column: the predictor's standardized
    slope in each stratum, pooled by inverse variance (fixed effect), with Cochran's Q.

    An association that vanishes here but not marginally is confounded by `strata`."""
    d = df[[outcome, predictor, strata]].dropna()
    key = d[strata]
    if pd.api.types.is_numeric_dtype(key) and key.nunique() > 8:
        key = pd.qcut(key, 4, labels=False, duplicates="drop")  # quartiles of a continuous confounder
    sd_y, sd_x = d[outcome].astype(float).std(ddof=1), d[predictor].astype(float).std(ddof=1)
    per, ws, bs = {}, [], []
    for level, g in d.groupby(key):
        x, y = g[predictor].astype(float).to_numpy(), g[outcome].astype(float).to_numpy()
        if len(g) < 5 or x.std() == 0:
            continue
        fit = stats.linregress(x, y)
        beta, se = fit.slope * sd_x / sd_y, fit.stderr * sd_x / sd_y
        if not (math.isfinite(se) and se > 0):
            continue
        per[str(level)] = {"beta": beta, "se": se, "n": len(g)}
        ws.append(1 / se**2)
        bs.append(beta)
    if not ws:
        raise ValueError(f"no stratum of {strata!r} has 5+ rows with varying {predictor!r}")
    w, b = np.array(ws), np.array(bs)
    pooled = float((w * b).sum() / w.sum())
    z = pooled * math.sqrt(w.sum())
    p, log_p = _two_sided_z(z)
    q = float((w * (b - pooled) ** 2).sum())
    q_p = float(stats.chi2.sf(q, len(b) - 1)) if len(b) > 1 else 1.0
    checks = {
        "homogeneity": _check(q_p > 0.05, f"Cochran Q={q:.3g}, p={q_p:.3g} over {len(b)} strata"),
        "strata_used": _check(len(b) >= 2, f"{len(b)} strata with enough rows"),
    }
    return _result(
        "stratified_fixed_effect",
        pooled,
        "standardized_beta",
        p,
        log_p,
        len(d),
        checks,
        strata=per,
        z=z,
        pair=[predictor, outcome],
        adjusted_for=[strata],
    )


def contingency(df, a, b):
    """Association of two categorical columns. Effect: Cramér's V, signed (phi) for a 2x2 table.

    Fisher's exact test when a 2x2 table has an expected count below 5, chi-square otherwise."""
    d = df[[a, b]].dropna()
    table = pd.crosstab(d[a], d[b])
    if table.shape[0] < 2 or table.shape[1] < 2:
        raise ValueError(f"{a!r} x {b!r} is a {table.shape} table: each needs 2+ levels")
    chi2, chi_p, dof, expected = stats.chi2_contingency(table, correction=False)
    n = int(table.to_numpy().sum())
    v = math.sqrt(chi2 / (n * (min(table.shape) - 1)))
    checks = {"expected_counts": _check(expected.min() >= 5, f"smallest expected count {expected.min():.3g}")}
    if table.shape == (2, 2):
        (n11, n12), (n21, n22) = table.to_numpy()
        v = math.copysign(v, n11 * n22 - n12 * n21)
        if expected.min() < 5:
            p = float(stats.fisher_exact(table.to_numpy()).pvalue)
            log_p = math.log(p) if p > 0 else float(stats.chi2.logsf(chi2, dof))
            return _result(
                "fisher_exact", v, "phi", p, min(log_p, 0.0), n, checks, table=table.to_numpy().tolist()
            )
    log_p = float(stats.chi2.logsf(chi2, dof))
    return _result(
        "chi_square",
        v,
        "cramers_v" if table.shape != (2, 2) else "phi",
        math.exp(log_p),
        min(log_p, 0.0),
        n,
        checks,
        chi2=chi2,
        dof=int(dof),
        table=table.to_numpy().tolist(),
    )


def _strata(d, given):
    """Row groups by every combination of the `given` columns' values (continuous ones in quartiles)."""
    keys = []
    for c in given:
        k = d[c]
        if pd.api.types.is_numeric_dtype(k) and k.nunique() > 8:
            k = pd.qcut(k, 4, labels=False, duplicates="drop")
        keys.append(k.astype(str))
    if not keys:
        return [("all", d)]
    label = keys[0].str.cat(keys[1:], sep="|") if len(keys) > 1 else keys[0]
    return list(d.groupby(label))


def conditional_independence(df, a, b, given=()):
    """Are two categorical (or integer-coded) columns associated within every stratum of `given`?
    A stratified G-test: the likelihood-ratio statistic G summed over strata, with the summed
    degrees of freedom. With `given` empty it is the G-test of the a x b table.

    Effect: Cramér's V of the pooled statistic, sqrt(G / (n (min(levels) - 1))), unsigned."""
    given = list(given)
    d = df[[a, b, *given]].dropna()
    levels = min(d[a].nunique(), d[b].nunique())
    if levels < 2:
        raise ValueError(f"{a!r} and {b!r} need 2+ levels each")
    g_total, dof, used, skipped = 0.0, 0, 0, 0
    for _, part in _strata(d, given):
        table = pd.crosstab(part[a], part[b]).to_numpy().astype(float)
        if table.shape[0] < 2 or table.shape[1] < 2:
            skipped += len(part)  # a stratum where a or b does not vary says nothing
            continue
        expected = np.outer(table.sum(1), table.sum(0)) / table.sum()
        nz = table > 0
        g_total += 2.0 * float((table[nz] * np.log(table[nz] / expected[nz])).sum())
        dof += (table.shape[0] - 1) * (table.shape[1] - 1)
        used += len(part)
    # No stratum where both vary (a or b is a function of `given`): the data show no dependence
    # given this set, G = 0 on 0 df, p = 1.
    log_p = float(stats.chi2.logsf(g_total, dof)) if dof else 0.0
    v = math.sqrt(max(g_total, 0.0) / (used * (levels - 1))) if used else 0.0
    checks = {
        "rows_per_df": _check(dof > 0 and used >= 5 * dof, f"{used} rows in informative strata for {dof} df"),
        "strata_informative": _check(
            skipped <= 0.5 * len(d), f"{skipped} of {len(d)} rows in strata without variation"
        ),
    }
    return _result(
        "stratified_g_test" if given else "g_test",
        v,
        "cramers_v",
        math.exp(log_p),
        min(log_p, 0.0),
        used,
        checks,
        g=g_total,
        dof=dof,
        pair=[a, b],
        adjusted_for=given,
    )


def cmh(df, a, b, given):
    """Cochran-Mantel-Haenszel test of two binary columns across strata of `given` (statsmodels):
    is the common odds ratio 1? Effect: the pooled (Mantel-Haenszel) log odds ratio as d
    (ln OR * sqrt(3) / pi), signed."""
    from statsmodels.stats.contingency_tables import StratifiedTable

    given = list(given)
    d = df[[a, b, *given]].dropna()
    for c in (a, b):
        if d[c].nunique() != 2:
            raise ValueError(
                f"{c!r} has {d[c].nunique()} levels; cmh needs two (use conditional_independence)"
            )
    la, lb = sorted(pd.unique(d[a]), key=str), sorted(pd.unique(d[b]), key=str)
    tables = []
    for _, part in _strata(d, given):
        t = pd.crosstab(part[a], part[b]).reindex(index=la, columns=lb, fill_value=0).to_numpy()
        if (t.sum(0) > 0).all() and (t.sum(1) > 0).all():
            tables.append(t.astype(float))
    if not tables:
        raise ValueError(f"no stratum of {given} has both levels of {a!r} and of {b!r}")
    st_table = StratifiedTable(np.dstack(tables))
    test = st_table.test_null_odds()
    log_or = float(st_table.logodds_pooled)
    log_p = float(stats.chi2.logsf(float(test.statistic), 1))
    homog = float(st_table.test_equal_odds().pvalue) if len(tables) > 1 else 1.0
    checks = {
        "homogeneity": _check(homog > 0.05, f"Breslow-Day p={homog:.3g} over {len(tables)} strata"),
        "strata_used": _check(len(tables) >= 2, f"{len(tables)} strata with both levels of each"),
    }
    return _result(
        "cmh",
        log_or * math.sqrt(3) / math.pi if math.isfinite(log_or) else 0.0,
        "d_from_log_odds",
        math.exp(log_p),
        min(log_p, 0.0),
        int(sum(t.sum() for t in tables)),
        checks,
        log_odds_ratio=log_or if math.isfinite(log_or) else None,
        pair=[a, b],
        adjusted_for=given,
    )


def enrichment(df, feature, selected):
    """Is a binary `feature` over-represented among rows where `selected` is true (hypergeometric)?

    Effect: the log odds ratio converted to d (Chinn 2000: d = ln(OR) * sqrt(3) / pi)."""
    d = df[[feature, selected]].dropna().astype(bool)
    big_n, k_total = len(d), int(d[feature].sum())
    n_sel = int(d[selected].sum())
    k = int((d[feature] & d[selected]).sum())
    if n_sel == 0 or k_total == 0 or n_sel == big_n:
        raise ValueError("enrichment needs selected and unselected rows and some rows with the feature")
    log_p = float(stats.hypergeom.logsf(k - 1, big_n, k_total, n_sel))  # one-sided: over-representation
    a, b_, c, e = k + 0.5, n_sel - k + 0.5, k_total - k + 0.5, big_n - n_sel - k_total + k + 0.5
    log_or = math.log(a * e / (b_ * c))
    checks = {
        "counts": _check(min(k, n_sel - k, k_total - k) >= 5, f"k={k}, selected={n_sel}, feature={k_total}")
    }
    return _result(
        "hypergeometric_enrichment",
        log_or * math.sqrt(3) / math.pi,
        "d_from_log_odds",
        math.exp(log_p),
        min(log_p, 0.0),
        big_n,
        checks,
        k=k,
        selected=n_sel,
        with_feature=k_total,
        log_odds_ratio=log_or,
    )


def record(result, expected_sign=0, figures=()):
    """Write the attempt's result file (the only channel back to Silva: printed text is ignored).

    expected_sign: +1 / -1 when the hypothesis predicts a direction, 0 for two-sided.
    figures: PNG files this code wrote (read by a vision model when one is configured)."""
    out = dict(result)
    out["expected_sign"] = int(expected_sign)
    out["figures"] = [str(f) for f in figures if os.path.isfile(f)]
    with open(RESULT_FILE, "w") as f:
        json.dump(out, f, allow_nan=False, default=str)
