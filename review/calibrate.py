"""Calibration: how well do the reviewer's scores predict real accept/reject decisions?

A dataset lists papers with their decisions (and, optionally, a score already obtained). The
papers are split, stratified, into a calibration part, on which the decision threshold on the
overall score is chosen (the one with the best balanced accuracy), and a test part, on which
everything is reported: balanced accuracy, accuracy, F1 (accept is the positive class), AUC,
FPR and FNR, each with a 95% percentile bootstrap interval (scipy.stats.bootstrap, paired over
papers). Beside them: always-reject and random baselines, and reference figures from the
literature. A reliability plot shows how the score maps to the chance of acceptance.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from engine.errors import ConfigError

METRICS: tuple[str, ...] = ("balanced_accuracy", "accuracy", "f1", "auc", "fpr", "fnr")
# Published reference points, shown beside the results (never computed here).
REFERENCES: dict[str, dict[str, float]] = {
    "human consistency (NeurIPS 2021 experiment)": {"balanced_accuracy": 0.66, "f1": 0.49},
    "AI Scientist reviewer on ICLR (Nature 2026)": {
        "balanced_accuracy": 0.69,
        "f1": 0.62,
        "auc": 0.69,
        "fpr": 0.45,
    },
}
REPORT_JSON = "calibration.json"
REPORT_MD = "calibration.md"
RELIABILITY_PNG = "reliability.png"


class Item(BaseModel):
    """One labelled paper. `score`: an overall score obtained before; None: review the paper."""

    paper: Path
    accept: bool
    score: float | None = None


class Interval(BaseModel):
    value: float
    low: float
    high: float


class FixedThreshold(BaseModel):
    """The published protocol (accept when Overall >= T, T fixed beforehand) on all scored papers."""

    threshold: float
    papers: int
    metrics: dict[str, Interval]


class CalibrationReport(BaseModel):
    dataset: str
    papers: int
    excluded: list[str] = Field(default_factory=list, description="papers without a score (review failed)")
    calibration_papers: int
    test_papers: int
    threshold: float = Field(description="accept when the overall score is at least this")
    metrics: dict[str, Interval]
    baselines: dict[str, dict[str, float]]
    references: dict[str, dict[str, float]] = Field(default_factory=lambda: dict(REFERENCES))
    brier: float = Field(description="Brier score of the logistic map score -> P(accept), on the test part")
    fixed: FixedThreshold | None = Field(
        None, description="--threshold T: T evaluated on every scored paper (nothing tuned)"
    )
    seed: int
    n_resamples: int


def _decision(value: object, where: str) -> bool:
    text = str(value).strip().lower()
    if text.startswith("accept") or text in ("1", "true", "yes"):
        return True
    if text.startswith("reject") or text in ("0", "false", "no"):
        return False
    raise ConfigError(f"{where}: decision {value!r} is neither accept nor reject")


def load_dataset(path: Path) -> list[Item]:
    """A CSV (header with `paper`, `decision`, optional `score`) or JSONL of the same fields.
    Paper paths are relative to the dataset file."""
    if not path.is_file():
        raise ConfigError(f"{path}: dataset not found; pass a CSV or JSONL of paper paths and decisions")
    if path.suffix.lower() == ".csv":
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = []
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{path}:{i}: not valid JSON ({exc})") from None
    else:
        raise ConfigError(f"{path}: expected a .csv or .jsonl dataset")
    items = []
    for i, row in enumerate(rows, 2 if path.suffix.lower() == ".csv" else 1):
        where = f"{path}:{i}"
        if not isinstance(row, dict) or "paper" not in row or "decision" not in row:
            raise ConfigError(f"{where}: each row needs `paper` and `decision` (accept or reject)")
        score = row.get("score")
        try:
            item = Item(
                paper=path.parent / str(row["paper"]),
                accept=_decision(row["decision"], where),
                score=None if score in (None, "") else score,
            )
        except ValidationError:
            raise ConfigError(f"{where}: score {score!r} is not a number") from None
        items.append(item)
    return items


# -- metrics ---------------------------------------------------------------------------------
def _rates(y: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    from sklearn.metrics import confusion_matrix

    tn, fp, fn, tp = confusion_matrix(y, pred, labels=[0, 1]).ravel()
    return (fp / (fp + tn) if fp + tn else 0.0), (fn / (fn + tp) if fn + tp else 0.0)


def metric(name: str, y: np.ndarray, scores: np.ndarray, threshold: float) -> float:
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, roc_auc_score

    pred = (scores >= threshold).astype(int)
    if name == "auc":
        # A resample holding one class only has no AUC: count it as chance, never as a failure.
        return float(roc_auc_score(y, scores)) if len(np.unique(y)) == 2 else 0.5
    if name == "balanced_accuracy":
        if len(np.unique(y)) < 2:
            return float(accuracy_score(y, pred))
        return float(balanced_accuracy_score(y, pred))
    if name == "accuracy":
        return float(accuracy_score(y, pred))
    if name == "f1":
        return float(f1_score(y, pred, zero_division=0.0))
    fpr, fnr = _rates(y, pred)
    return fpr if name == "fpr" else fnr


def fast_metric(name: str, y: np.ndarray, scores: np.ndarray, threshold: float) -> np.ndarray:
    """`metric` vectorised over leading axes (one row per bootstrap resample): the bootstrap makes
    thousands of resamples, too many for sklearn's per-call overhead. Tests hold it to sklearn."""
    from scipy.stats import rankdata

    y = y.astype(bool)
    pred = scores >= threshold
    pos, neg = y.sum(-1), (~y).sum(-1)
    tp, fp = (y & pred).sum(-1), (~y & pred).sum(-1)
    fn, tn = pos - tp, neg - fp
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.where(pos > 0, tp / pos, np.nan)
        tnr = np.where(neg > 0, tn / neg, np.nan)
        if name == "balanced_accuracy":
            return np.where((pos > 0) & (neg > 0), (tpr + tnr) / 2, (tp + tn) / y.shape[-1])
        if name == "accuracy":
            return (tp + tn) / y.shape[-1]
        if name == "f1":
            return np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
        if name == "fpr":
            return np.where(neg > 0, fp / neg, 0.0)
        if name == "fnr":
            return np.where(pos > 0, fn / pos, 0.0)
        # AUC as the Mann-Whitney statistic over mid-ranks (ties count one half).
        ranks = rankdata(scores, axis=-1)
        auc = ((ranks * y).sum(-1) - pos * (pos + 1) / 2) / (pos * neg)
        return np.where((pos > 0) & (neg > 0), auc, 0.5)


def with_interval(
    name: str, y: np.ndarray, scores: np.ndarray, threshold: float, n_resamples: int, rng: np.random.Generator
) -> Interval:
    from scipy.stats import bootstrap

    def statistic(yy: np.ndarray, ss: np.ndarray, axis: int = -1) -> np.ndarray:
        return fast_metric(name, np.moveaxis(yy, axis, -1), np.moveaxis(ss, axis, -1), threshold)

    res = bootstrap(
        (y, scores),
        statistic,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=0.95,
        method="percentile",
        rng=rng,
    )
    return Interval(
        value=metric(name, y, scores, threshold),
        low=float(res.confidence_interval.low),
        high=float(res.confidence_interval.high),
    )


def choose_threshold(y: np.ndarray, scores: np.ndarray) -> float:
    """The cut with the best balanced accuracy; among equals, the middle one (robust to ties)."""
    candidates = np.unique(np.concatenate([scores, [scores.max() + 1.0]]))
    values = [metric("balanced_accuracy", y, scores, t) for t in candidates]
    best = [t for t, v in zip(candidates, values) if v == max(values)]
    return float(best[len(best) // 2])


def baselines(y: np.ndarray, accept_rate: float) -> dict[str, dict[str, float]]:
    """Always-reject, computed on the test part; random (accept with the calibration part's
    accept rate q, independent of the paper), as expected values: BA 0.5, AUC 0.5, FPR q, FNR 1-q."""
    never = np.zeros(len(y))
    reject = {name: metric(name, y, never, 0.5) for name in METRICS}
    p, q = float(y.mean()), accept_rate
    random = {
        "balanced_accuracy": 0.5,
        "accuracy": p * q + (1 - p) * (1 - q),
        "f1": 2 * p * q / (p + q) if p + q else 0.0,
        "auc": 0.5,
        "fpr": q,
        "fnr": 1 - q,
    }
    return {"always reject": reject, f"random (accept {q:.0%})": random}


def calibrate(
    items: list[Item],
    *,
    dataset: str,
    calibration_fraction: float = 0.5,
    seed: int = 0,
    n_resamples: int = 2000,
    fixed_threshold: float | None = None,
) -> tuple[CalibrationReport, dict[str, np.ndarray]]:
    """The report, and the arrays the reliability plot needs."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss
    from sklearn.model_selection import train_test_split

    scored = [i for i in items if i.score is not None and math.isfinite(i.score)]
    excluded = [str(i.paper) for i in items if i not in scored]
    y = np.array([int(i.accept) for i in scored])
    s = np.array([float(i.score) for i in scored])  # type: ignore[arg-type]
    if min(int(y.sum()), int(len(y) - y.sum())) < 4:
        raise ConfigError(
            f"{dataset}: calibration needs at least 4 accepted and 4 rejected papers with a score "
            f"(has {int(y.sum())} and {int(len(y) - y.sum())})"
        )
    y_cal, y_test, s_cal, s_test = train_test_split(
        y, s, train_size=calibration_fraction, stratify=y, random_state=seed
    )
    threshold = choose_threshold(y_cal, s_cal)
    rng = np.random.default_rng(seed)
    metrics = {name: with_interval(name, y_test, s_test, threshold, n_resamples, rng) for name in METRICS}
    logistic = LogisticRegression().fit(s_cal.reshape(-1, 1), y_cal)
    p_test = logistic.predict_proba(s_test.reshape(-1, 1))[:, 1]
    report = CalibrationReport(
        dataset=dataset,
        papers=len(items),
        excluded=excluded,
        calibration_papers=len(y_cal),
        test_papers=len(y_test),
        threshold=threshold,
        metrics=metrics,
        baselines=baselines(y_test, float(y_cal.mean())),
        brier=float(brier_score_loss(y_test, p_test)),
        fixed=None
        if fixed_threshold is None
        else FixedThreshold(
            threshold=fixed_threshold,
            papers=len(y),
            metrics={name: with_interval(name, y, s, fixed_threshold, n_resamples, rng) for name in METRICS},
        ),
        seed=seed,
        n_resamples=n_resamples,
    )
    return report, {"y": y, "scores": s, "y_test": y_test, "p_test": p_test}


# -- outputs ---------------------------------------------------------------------------------
def render_table(report: CalibrationReport) -> str:
    columns = list(report.baselines) + list(report.references)
    header = ["metric", "reviewer (95% CI)", *columns]
    lines = [
        f"# Reviewer calibration: {report.dataset}",
        "",
        f"Tuned split: {report.papers} papers ({len(report.excluded)} without a score); threshold chosen on "
        f"{report.calibration_papers}, reported on {report.test_papers}: accept when overall >= "
        f"{report.threshold:g}. Bootstrap: {report.n_resamples} resamples, seed {report.seed}. "
        f"Brier score of the logistic map: {report.brier:.3f}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for name in METRICS:
        m = report.metrics[name]
        row = [name, f"{m.value:.3f} [{m.low:.3f}, {m.high:.3f}]"]
        for col in columns:
            source = report.baselines.get(col) or report.references.get(col, {})
            row.append(f"{source[name]:.2f}" if name in source else "")
        lines.append("| " + " | ".join(row) + " |")
    if report.fixed is not None:
        f = report.fixed
        lines += [
            "",
            f"## Fixed threshold (the published protocol): accept when overall >= {f.threshold:g}, "
            f"evaluated on all {f.papers} scored papers, nothing tuned",
            "",
            "| metric | reviewer (95% CI) |",
            "|---|---|",
        ]
        lines += [f"| {name} | {m.value:.3f} [{m.low:.3f}, {m.high:.3f}] |" for name, m in f.metrics.items()]
    return "\n".join(lines) + "\n"


def plot_reliability(report: CalibrationReport, arrays: dict[str, np.ndarray], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.calibration import calibration_curve

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.8))
    bins = max(2, min(5, len(arrays["y_test"]) // 4))
    observed, predicted = calibration_curve(
        arrays["y_test"], arrays["p_test"], n_bins=bins, strategy="quantile"
    )
    left.plot([0, 1], [0, 1], ls="--", color="#888888", label="perfectly calibrated")
    left.plot(predicted, observed, marker="o", color="#4c72b0", label="reviewer (test part)")
    left.set(
        xlim=(0, 1),
        ylim=(0, 1),
        xlabel="predicted P(accept) from the overall score",
        ylabel="observed accept rate",
        title=f"Reliability (Brier {report.brier:.3f})",
    )
    left.legend(loc="upper left", fontsize=8)
    y, s = arrays["y"], arrays["scores"]
    levels = np.unique(np.round(s))
    rates = [y[np.round(s) == v].mean() for v in levels]
    counts = [int((np.round(s) == v).sum()) for v in levels]
    right.bar(levels, rates, width=0.7, color="#4c72b0", alpha=0.85)
    for v, r, n in zip(levels, rates, counts):
        right.annotate(f"n={n}", (v, r), ha="center", va="bottom", fontsize=8)
    right.axvline(report.threshold - 0.5, color="#c44e52", ls="--", label=f"threshold {report.threshold:g}")
    right.set(
        ylim=(0, 1.1), xlabel="overall score (rounded)", ylabel="accept rate", title="Accept rate by score"
    )
    right.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(report: CalibrationReport, arrays: dict[str, np.ndarray], out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / REPORT_JSON, "table": out_dir / REPORT_MD, "plot": out_dir / RELIABILITY_PNG}
    paths["json"].write_text(report.model_dump_json(indent=2) + "\n")
    paths["table"].write_text(render_table(report))
    plot_reliability(report, arrays, paths["plot"])
    return paths


ScoreFn = Callable[[list[Path]], dict[Path, float | None]]


def fill_scores(items: list[Item], score: ScoreFn) -> list[Item]:
    """Items whose score is missing get one from `score` (reviewing the papers); None if it failed."""
    missing = [i.paper for i in items if i.score is None]
    if not missing:
        return items
    got = score(missing)
    return [i if i.score is not None else i.model_copy(update={"score": got.get(i.paper)}) for i in items]
