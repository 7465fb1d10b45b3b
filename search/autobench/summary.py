"""Bench tables from a run's journal: one row per (task, env, agent, n[, length]) with success
rate, cycles to success, interventions, invalid-matrix rate and the similarity scores."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from engine.journal import Journal
from engine.node import Node, NodeStatus
from search.autobench.config import Task

COLUMNS = (
    "success",
    "cycles_to_success",
    "interventions",
    "invalid_rate",
    "reachability_similarity",
    "exact_adjacency",
    "edge_f1",
    "integration_exact",
    "integration_accuracy",
)


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def rows(journal: Journal) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str, int, int], list[Node]] = defaultdict(list)
    for node in journal:
        if node.status != NodeStatus.GOOD or "spec" not in node.params:
            continue
        t = Task.model_validate({k: v for k, v in node.params.items() if k != "key"})
        groups[(t.task, t.spec.env, t.agent, t.spec.n, t.length or 0)].append(node)
    out = []
    for (task, env, agent, n, length), nodes in sorted(groups.items()):
        row: dict[str, Any] = {"task": task, "env": env, "agent": agent, "n": n}
        if task == "tracking":
            row["length"] = length
        row["episodes"] = len(nodes)
        for col in COLUMNS:
            values = [v for node in nodes if (v := node.metric(col)) is not None]
            if values:
                row[col] = _mean(values)
        out.append(row)
    return out


def agent_totals(table: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Episode success rate and mean cycles to success per agent, over every n."""
    totals: dict[str, dict[str, float | None]] = {}
    for agent in sorted({r["agent"] for r in table if r["task"] == "episode"}):
        mine = [r for r in table if r["task"] == "episode" and r["agent"] == agent]
        weights = sum(r["episodes"] for r in mine)
        totals[agent] = {
            "success_rate": round(sum(r["success"] * r["episodes"] for r in mine) / weights, 4),
            "mean_cycles_to_success": _mean(
                [r["cycles_to_success"] for r in mine if "cycles_to_success" in r]
            ),
        }
    return totals
