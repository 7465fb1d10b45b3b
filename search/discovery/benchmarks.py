"""Offline discovery benchmarks: every table is generated, or sampled from a network shipped in
an installed package; nothing is downloaded.

- `planted_table`: known effects, two pairs confounded by age, independent nulls; `reverse=True` gives the
  counterfactual variant where every planted effect has the opposite sign of common belief.
- `null_table`: a column-permuted copy: every association is destroyed, marginals are kept;
  `repeated_rows` copies each row (repeated measures exported flat).
- `interaction_table`: two main effects and their interaction on one outcome.
- `bn_samples`: SACHS or ASIA sampled from pgmpy's bundled networks (`get_example_model`;
  `load_model` downloads and is never used), with the true skeleton, and PC and GES from
  causal-learn on the same samples.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

# (cause, effect, sign as commonly believed): the planted effects and the prior's facts.
PLANTED = [
    ("exercise_hours", "resting_heart_rate", -1),
    ("age", "blood_pressure", +1),
    ("smoker", "blood_pressure", +1),
    ("sleep_hours", "cholesterol", -1),
]
# coffee_cups rises with age, and so do cholesterol and blood_pressure, with no direct link to
# coffee: both pairs are confounded by age.
CONFOUNDED = [("coffee_cups", "cholesterol", "age"), ("coffee_cups", "blood_pressure", "age")]
NULL_COLUMNS = ("shoe_size", "income", "commute_minutes")


def planted_table(seed: int, n: int = 800, *, reverse: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s = -1.0 if reverse else 1.0
    age = rng.normal(50, 12, n)
    z_age = (age - 50) / 12
    exercise = np.clip(rng.normal(4, 2, n), 0, None)
    smoker = (rng.random(n) < 0.3).astype(int)
    sleep = rng.normal(7, 1.1, n)
    coffee = np.clip(2 + 1.0 * z_age + rng.normal(0, 1, n), 0, None)
    return pd.DataFrame(
        {
            "age": age.round(1),
            "exercise_hours": exercise.round(2),
            "smoker": smoker,
            "sleep_hours": sleep.round(2),
            "coffee_cups": coffee.round(1),
            "resting_heart_rate": (70 + s * -4.0 * (exercise - 4) / 2 + rng.normal(0, 6, n)).round(1),
            "blood_pressure": (125 + s * (7 * z_age + 8 * smoker) + rng.normal(0, 10, n)).round(1),
            "cholesterol": (200 + s * -9 * (sleep - 7) / 1.1 + 12 * z_age + rng.normal(0, 25, n)).round(1),
            "shoe_size": rng.normal(42, 2.5, n).round(1),
            "income": rng.lognormal(10.5, 0.5, n).round(0),
            "commute_minutes": rng.gamma(2.0, 15.0, n).round(0),
        }
    )


# y rises with each of dose and activity and, beyond both, with their product.
INTERACTION = ("dose", "activity", "response")


def interaction_table(seed: int, n: int = 800, *, interaction: float = 0.35) -> pd.DataFrame:
    """`interaction=0`: the same two main effects with no interaction (what a follow-up must reject)."""
    rng = np.random.default_rng(seed)
    dose, activity = rng.normal(size=n), rng.normal(size=n)
    response = 0.35 * dose + 0.35 * activity + interaction * dose * activity + rng.normal(size=n)
    return pd.DataFrame(
        {
            "dose": dose.round(3),
            "activity": activity.round(3),
            "response": response.round(3),
            "weight": rng.normal(70, 10, n).round(1),
            "site_temperature": rng.normal(21, 2, n).round(2),
        }
    )


def repeated_rows(df: pd.DataFrame, copies: int, seed: int) -> pd.DataFrame:
    """Each row `copies` times, shuffled: repeated measures exported flat (every copy identical)."""
    out = df.loc[np.repeat(df.index, copies)].sample(frac=1, random_state=seed)
    return out.reset_index(drop=True)


def prior_facts() -> str:
    """The prior as commonly believed (true on `planted_table`, reversed on its counterfactual)."""
    lines = [
        f"Known fact: more `{x}` {'increases' if sign > 0 else 'decreases'} `{y}`" for x, y, sign in PLANTED
    ]
    return "\n".join(lines) + "\n"


def null_table(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Each column permuted independently: marginals kept, every association destroyed."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.permutation(df[c].to_numpy()) for c in df.columns})


@dataclass(frozen=True)
class NetworkSample:
    name: str
    data: pd.DataFrame  # integer-coded states
    true_edges: frozenset[frozenset[str]]


def bn_samples(name: str, n: int, seed: int) -> NetworkSample:
    """`name`: sachs or asia, from pgmpy's bundled example networks."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from pgmpy.sampling import BayesianModelSampling
        from pgmpy.utils import get_example_model

        model = get_example_model(name)
        raw = BayesianModelSampling(model).forward_sample(size=n, seed=seed, show_progress=False)
    data = pd.DataFrame(
        {
            c: pd.Categorical(raw[c], categories=sorted(model.get_cpds(c).state_names[c])).codes
            for c in model.nodes()
        }
    )
    edges = frozenset(frozenset(e) for e in model.edges())
    return NetworkSample(name, data.astype(int), edges)


def edge_f1(found: set[frozenset[str]], true: frozenset[frozenset[str]]) -> dict[str, float]:
    """Skeleton (undirected) precision, recall and F1."""
    tp = len(found & true)
    precision = tp / len(found) if found else 0.0
    recall = tp / len(true) if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "edges_found": len(found),
        "edges_true": len(true),
    }


def _skeleton(graph: object, names: list[str]) -> set[frozenset[str]]:
    adj = np.asarray(graph.graph)  # type: ignore[attr-defined]
    return {
        frozenset((names[i], names[j]))
        for i, j in itertools.combinations(range(len(names)), 2)
        if adj[i, j] != 0 or adj[j, i] != 0
    }


def pc_edges(data: pd.DataFrame, alpha: float = 0.05) -> set[frozenset[str]]:
    from causallearn.search.ConstraintBased.PC import pc

    g = pc(data.to_numpy(), alpha, "chisq", show_progress=False, node_names=list(data.columns))
    return _skeleton(g.G, list(data.columns))


def ges_edges(data: pd.DataFrame) -> set[frozenset[str]]:
    from causallearn.search.ScoreBased.GES import ges

    out = ges(data.to_numpy(), score_func="local_score_BDeu", node_names=list(data.columns))
    return _skeleton(out["G"], list(data.columns))
