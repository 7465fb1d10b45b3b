"""Aggregation nodes: mean and standard deviation over seed replicates, and a plot with error bars.

This is Silva's own code (not LLM-written), so it runs in the worker without a sandbox.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine.attempt import fresh_workspace
from engine.node import AttemptResult, MetricSpec, MetricValue
from engine.outcome import NodeOutcome

AGGREGATE_FILE = "aggregate.json"
PLOT_FILE = "aggregate.png"


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Sample standard deviation (n-1); 0 for a single value."""
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


class MetricStats(BaseModel):
    mean: float
    std: float
    n: int


class AggregateOutcome(NodeOutcome):
    """Mean, sd and count per group (subject first) and metric."""

    family: str = "aggregate"
    table: dict[str, dict[str, MetricStats]]

    @classmethod
    def from_legacy(cls, extra: dict[str, Any]) -> AggregateOutcome | None:
        return cls(table=extra["aggregate"]) if "aggregate" in extra else None


@dataclass
class AggregationJob:
    """`groups` maps a label (e.g. 'method', 'ablation: no_scaling') to metric -> replicate values.

    The first group is the subject of the aggregation: its means become the node's metrics.
    """

    node_id: str
    attempt: int
    run_dir: Path
    title: str
    metrics: list[MetricSpec]
    groups: dict[str, dict[str, list[float]]]
    # Means and a plot are Silva's computation, no experiment: the CPU pool runs it, not a slot
    # (on 4 slots it had held 17% of the slot time).
    holds_resources: bool = False
    cpu_pool: bool = True

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        started = time.time()
        ws = fresh_workspace(self.run_dir, self.node_id, self.attempt)
        table = {
            label: {
                name: dict(zip(("mean", "std"), mean_std(vals)), n=len(vals))
                for name, vals in per_metric.items()
                if vals
            }
            for label, per_metric in self.groups.items()
        }
        (ws / AGGREGATE_FILE).write_text(
            json.dumps({"title": self.title, "groups": table, "values": self.groups}, indent=2)
        )
        self._plot(ws / PLOT_FILE, table)
        subject = table[next(iter(self.groups))]
        directions = {m.name: m.direction for m in self.metrics}  # undeclared metrics have none
        rel = ws.relative_to(self.run_dir)
        return AttemptResult(
            status="good",
            reason=f"aggregated {len(self.groups)} group(s)",
            metrics=[
                MetricValue(name=name, value=s["mean"], direction=directions.get(name))
                for name, s in subject.items()
            ],
            artifacts=[str(rel / AGGREGATE_FILE), str(rel / PLOT_FILE)],
            workspace=str(rel),
            started_at=started,
            finished_at=time.time(),
            outcome=AggregateOutcome(table=table),
        )

    def _plot(self, path: Path, table: dict[str, dict[str, dict[str, float]]]) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = [m.name for m in self.metrics if any(m.name in g for g in table.values())]
        fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
        labels = list(table)
        for ax, name in zip(axes[0], names):
            means = [table[lb].get(name, {}).get("mean", float("nan")) for lb in labels]
            stds = [table[lb].get(name, {}).get("std", 0.0) for lb in labels]
            ax.bar(range(len(labels)), means, yerr=stds, capsize=5, color="#4c72b0", alpha=0.85)
            ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=8)
            ax.set_title(name)
        fig.suptitle(self.title + "  (mean ± sd over seeds)", fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
