"""The compute-scaling report: how each idea's and the forest's best result grew with the GPU-hours
and dollars spent, the marginal gain per extra GPU-hour over the last quarter of the spend, and
where successive halving stopped which idea. Read-only: built from the journal and the ledger.

`scaling(run_dir, journal)` gives DataFrames (also `silva.open_run(...).scaling()`);
`write_report` writes `scaling.csv`, `stops.csv` and two PNG plots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from engine.events import AllocationDecided, AttemptFinished, ComputeUsed, NodeCreated
from engine.journal import Journal
from engine.llm.ledger import LEDGER_FILE, read_records
from engine.node import MetricSpec

FOREST = "(forest)"
SUPPORT = ("aggregation", "selection")  # nodes that produce no metric of their own


@dataclass
class Scaling:
    curves: pd.DataFrame  # idea, gpu_hours, dollars, best (the metric's own units): one row per change
    table: pd.DataFrame  # one row per idea and one for the forest
    stops: pd.DataFrame  # successive halving's stops: idea, rung, stage, score, threshold, gpu_hours
    metric: str


def _spec(journal: Journal) -> MetricSpec:
    return journal.primary_metric or MetricSpec(name="metric")


def curves(run_dir: Path, journal: Journal) -> pd.DataFrame:
    """Best validation metric of each idea and of the forest against cumulative GPU-hours and
    dollars, from the journal's events (in order) and the ledger's calls (by time)."""
    spec = _spec(journal)
    plan = set(journal.plan_stages)
    ledger = sorted((r.ts, r.idea or "default", r.dollars) for r in read_records(run_dir / LEDGER_FILE))
    node_idea: dict[str, str] = {}
    gpu: dict[str, float] = {FOREST: 0.0}
    usd: dict[str, float] = {FOREST: 0.0}
    best: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    k = 0

    def emit(idea: str) -> None:
        for who in (idea, FOREST):
            if who in best:
                rows.append(
                    {
                        "idea": who,
                        "gpu_hours": gpu.get(who, 0.0),
                        "dollars": usd.get(who, 0.0),
                        "best": best[who] if spec.direction == "maximize" else -best[who],
                    }
                )

    for e in journal.log.read(NodeCreated, ComputeUsed, AttemptFinished):
        while k < len(ledger) and ledger[k][0] <= e.ts:
            _, idea, d = ledger[k]
            usd[idea] = usd.get(idea, 0.0) + d
            usd[FOREST] += d
            k += 1
        if isinstance(e, NodeCreated):
            node = e.node
            if node.stage in plan and node.kind not in SUPPORT:
                node_idea[node.id] = node.idea
        elif isinstance(e, ComputeUsed):
            gpu[e.idea] = gpu.get(e.idea, 0.0) + e.gpu_s / 3600
            gpu[FOREST] += e.gpu_s / 3600
            emit(e.idea)
        elif isinstance(e, AttemptFinished) and e.node_id in node_idea and e.result.status == "good":
            idea = node_idea[e.node_id]
            value = next((m.value for m in e.result.metrics if m.name == spec.name), None)
            o = spec.oriented(value)
            if o is not None:
                for who in (idea, FOREST):
                    if who not in best or o > best[who]:
                        best[who] = o
                emit(idea)
    return pd.DataFrame(rows, columns=["idea", "gpu_hours", "dollars", "best"])


def _best_at(c: pd.DataFrame, gpu_hours: float) -> float | None:
    seen = c[c.gpu_hours <= gpu_hours + 1e-12]
    return None if seen.empty else float(seen.best.iloc[-1])


def marginal(c: pd.DataFrame, spec: MetricSpec) -> float | None:
    """Improvement of the best metric (oriented: positive is better) per extra GPU-hour over the
    last quarter of the GPU-hours spent."""
    if c.empty or c.gpu_hours.max() <= 0:
        return None
    total = float(c.gpu_hours.max())
    end, start = _best_at(c, total), _best_at(c, 0.75 * total)
    if end is None or start is None:
        return None
    gain = spec.oriented(end)
    before = spec.oriented(start)
    return None if gain is None or before is None else (gain - before) / (0.25 * total)


def stops(journal: Journal) -> pd.DataFrame:
    rows = [
        {
            "idea": e.idea,
            "cause": e.cause or "",
            "rung": e.rung,
            "stage": e.stage,
            "score": e.score,
            "threshold": e.threshold,
            "gpu_hours": e.gpu_hours,
            "returned_gpu_hours": e.returned_gpu_hours,
            "reason": e.reason,
        }
        for e in journal.log.read(AllocationDecided)
        if e.decision == "stopped"
    ]
    return pd.DataFrame(
        rows,
        columns=[
            "idea",
            "cause",
            "rung",
            "stage",
            "score",
            "threshold",
            "gpu_hours",
            "returned_gpu_hours",
            "reason",
        ],
    )


def scaling(run_dir: Path, journal: Journal) -> Scaling:
    spec = _spec(journal)
    c = curves(run_dir, journal)
    s = stops(journal)
    ideas = sorted({n.idea for n in journal}) + [FOREST]
    rows = []
    for idea in ideas:
        ci = c[c.idea == idea]
        chosen = journal.heldout.get(idea) if idea != FOREST else None
        heldout = chosen.heldout_value if chosen else None
        stopped = s[s.idea == idea]
        rows.append(
            {
                "idea": idea,
                "gpu_hours": float(ci.gpu_hours.max()) if not ci.empty else 0.0,
                "dollars": float(ci.dollars.max()) if not ci.empty else 0.0,
                "best_validation": float(ci.best.iloc[-1]) if not ci.empty else None,
                "heldout": heldout,
                "result": heldout
                if heldout is not None
                else (float(ci.best.iloc[-1]) if not ci.empty else None),
                "marginal_per_gpu_hour": marginal(ci, spec),
                "stopped_by": (stopped.cause.iloc[0] or "allocation") if not stopped.empty else "",
                "stopped_at_stage": stopped.stage.iloc[0] if not stopped.empty else "",
            }
        )
    return Scaling(c, pd.DataFrame(rows), s, spec.name)


def _plot(sc: Scaling, x: str, label: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    ideas = [i for i in sc.table.idea if i != FOREST]
    finals = sc.table.set_index("idea").best_validation

    def final(idea: str) -> float:
        value = finals.get(idea)
        return -math.inf if value is None else float(value)

    named = set(sorted(ideas, key=lambda i: -final(i))[:6])
    for idea in ideas:
        ci = sc.curves[sc.curves.idea == idea]
        if ci.empty:
            continue
        ax.step(
            ci[x],
            ci.best,
            where="post",
            lw=1.0,
            alpha=0.8 if idea in named else 0.35,
            label=idea if idea in named or len(ideas) <= 8 else None,
        )
    cf = sc.curves[sc.curves.idea == FOREST]
    if not cf.empty:
        ax.step(cf[x], cf.best, where="post", lw=2.6, color="black", label="forest (best of all ideas)")
    for _, stop in sc.stops.iterrows():
        ci = sc.curves[sc.curves.idea == stop.idea]
        if not ci.empty:
            ax.plot(ci[x].iloc[-1], ci.best.iloc[-1], marker="x", color="crimson", ms=8, mew=2)
    if not sc.stops.empty:
        ax.plot([], [], "x", color="crimson", ms=8, mew=2, label=f"stopped ({len(sc.stops)} ideas)")
    ax.set_xlabel(label)
    ax.set_ylabel(f"best {sc.metric} (validation)")
    ax.set_title(f"best {sc.metric} against {label}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(run_dir: Path, journal: Journal, out: Path) -> tuple[Scaling, list[Path]]:
    sc = scaling(run_dir, journal)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "scaling.csv", out / "stops.csv", out / "scaling_gpu_hours.png"]
    sc.table.to_csv(paths[0], index=False)
    sc.stops.to_csv(paths[1], index=False)
    _plot(sc, "gpu_hours", "cumulative GPU-hours", paths[2])
    if not sc.curves.empty and sc.curves.dollars.max() > 0:
        paths.append(out / "scaling_dollars.png")
        _plot(sc, "dollars", "cumulative LLM dollars", paths[-1])
    return sc, paths
