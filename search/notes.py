"""The experimental journal: per idea, what each stage tried, what worked, and the numbers,
written to `<run>/notes/<idea>/notes.json` and `journal.md` for a paper writer.

Derived from the journal only (node metrics come from results.json, aggregates from
aggregate.json), rewritten whenever a stage ends or the held-out choice is made, so a resumed
run produces the same files.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from engine.aggregate import AggregateOutcome
from engine.journal import Journal
from engine.node import Node, NodeStatus
from search.agentic.operators.outcome import operator_outcome, summary
from search.idea import Idea
from search.tree import SUPPORT_KINDS

NOTES_DIR = "notes"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


class ExperimentNotes:
    def __init__(self, run_dir: Path, journal: Journal, idea: Idea, label: Callable[[Node], str]) -> None:
        self.dir = run_dir / NOTES_DIR / idea.name
        self.journal, self.idea, self.label = journal, idea, label
        self._written: tuple[int, bool, bool] | None = None

    def refresh(self) -> None:
        name = self.idea.name
        key = (
            sum((name, s) in self.journal.stage_ended for s in self.journal.plan_stages),
            name in self.journal.heldout,
            name in self.journal.idea_stopped,
        )
        if key != self._written:
            self.write()
            self._written = key

    def build(self) -> dict[str, Any]:
        j, name, metric = self.journal, self.idea.name, self.idea.primary.name
        stages: dict[str, Any] = {}
        for stage in self.journal.plan_stages:
            ended = j.stage_ended.get((name, stage))
            if ended is None:
                continue
            decision = j.stage_best.get((name, stage))
            searched = [n for n in j.in_stage(stage, idea=name) if n.kind not in SUPPORT_KINDS]
            agg_id = ended.aggregate_node_id
            agg = j.nodes[agg_id] if agg_id else None
            good = [n for n in searched if n.status == NodeStatus.GOOD and n.metric(metric) is not None]
            good.sort(key=lambda n: n.metric(metric), reverse=self.idea.primary.direction == "maximize")  # type: ignore[arg-type, return-value]
            stages[stage] = {
                "ended_because": ended.reason,
                "best_node": ended.best_node_id,
                "best_value": decision.value if decision else None,
                "decision": decision.reason if decision else None,
                "selection": decision.selection if decision else None,
                "aggregate": _table(agg),
                "aggregate_artifacts": agg.artifacts if agg else [],
                "what_worked": [
                    {"node": n.id, "label": self.label(n), metric: n.metric(metric)} for n in good[:5]
                ],
                "tried": [self._entry(n) for n in searched],
            }
        return {
            "idea": self.idea.model_dump(mode="json", include={"name", "title", "hypothesis"}),
            "primary_metric": self.idea.primary.model_dump(),
            "stages": stages,
            "heldout": j.heldout[name].model_dump(mode="json") if name in j.heldout else None,
            "stopped": j.idea_stopped[name].model_dump(mode="json") if name in j.idea_stopped else None,
        }

    def _entry(self, n: Node) -> dict[str, Any]:
        out = operator_outcome(n)
        return {
            "node": n.id,
            "kind": n.kind,
            "parent": n.parent_id,
            "status": n.status.value,
            "plan": n.plan[:400],
            "note": summary(n)[:400],
            "metrics": {m.name: m.value for m in n.metrics},
            **({"hyperparameters": out.hyperparameters} if out.hyperparameters else {}),
            **({"ablation": out.ablation} if out.ablation else {}),
            "plots": out.plots,
        }

    def write(self) -> None:
        data = self.build()
        self.dir.mkdir(parents=True, exist_ok=True)
        # orjson: the standard encoder with an indent is pure Python, and a rolling forest's
        # stage ends made it a tenth of the driver's CPU (a NaN is written null, as in events).
        text = orjson.dumps(data, default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
        _atomic(self.dir / "notes.json", text.decode())
        _atomic(self.dir / "journal.md", self.markdown(data))

    def markdown(self, data: dict[str, Any]) -> str:
        metric = self.idea.primary.name
        out = [
            f"# Experimental journal: {self.idea.title}",
            "",
            f"Hypothesis: {self.idea.hypothesis}",
            f"Primary metric: {metric} ({self.idea.primary.direction})",
            "",
        ]
        for stage, s in data["stages"].items():
            out += [f"## {stage}", "", f"Ended because: {s['ended_because']}", ""]
            if s["best_node"]:
                out.append(
                    f"Best node: {s['best_node']} with {metric} = {_num(s['best_value'])} ({s['decision']})"
                )
            if s["aggregate"]:
                out += ["", "| group | metric | mean | sd | n |", "|---|---|---|---|---|"]
                for group, per_metric in s["aggregate"].items():
                    for m, st in per_metric.items():
                        out.append(f"| {group} | {m} | {_num(st['mean'])} | {_num(st['std'])} | {st['n']} |")
                out.append(f"\nArtifacts: {', '.join(s['aggregate_artifacts'])}")
            out += ["", "Tried:"]
            for t in s["tried"]:
                what = t.get("hyperparameters") or t.get("ablation") or ""
                out.append(
                    f"- {t['node']} {t['kind']}{' ' + str(what) if what else ''} [{t['status']}] "
                    f"{metric}={_num(t['metrics'].get(metric))}: {t['note']}"
                )
            out.append("")
        h = data["heldout"]
        if h:
            out += [
                "## held-out selection",
                "",
                f"{h['reason']}: node {h['node_id']} with held-out {metric} = "
                f"{_num(h['heldout_value'])} (search {metric} = {_num(h['search_value'])})",
                "",
            ]
            for r in h["candidates"]:
                out.append(
                    f"- {r['node_id']}: search {_num(r['search_value'])}, held-out {_num(r['heldout_value'])}"
                )
        if data["stopped"]:
            out += ["", f"Stopped early: {data['stopped']['reason']}"]
        return "\n".join(out) + "\n"


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _table(agg: Node | None) -> dict[str, Any] | None:
    outcome = agg.outcome_as(AggregateOutcome) if agg is not None else None
    return outcome.model_dump(mode="json")["table"] if outcome is not None else None
