"""Everything the writer knows about a run, read once from its directory into pydantic models.

This is the ONE module of writeup/ that touches the journal and the run's file layout: the
engine's node model is being refactored, so the rest of the package sees only `RunResults`.
Sources: the event log (stage decisions and ends, node metrics, params, plans, artifacts), the
aggregate.json artifact of each stage's aggregation node (per-group mean/sd/n and raw values),
plots among node artifacts, the experimental notes, and the template or idea file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from engine.errors import ConfigError
from engine.journal import EVENTS_FILE, Journal
from engine.node import MetricSpec, Node, NodeStatus
from engine.summary import DOCUMENT_STAGES
from search.heldout import HELDOUT
from search.stages import AGGREGATION, REPLICATION, SELECTION

NOTES_DIR = "notes"
# Nodes a stage adds after its search: they are no part of the budget the search spent.
_NOT_SEARCH = frozenset({REPLICATION, AGGREGATION, SELECTION, HELDOUT})


class GroupStats(BaseModel):
    mean: float
    std: float
    n: int
    values: list[float] = Field(default_factory=list, description="one value per seed replicate")


class StageResult(BaseModel):
    stage: str
    ended_because: str = ""
    best_node_id: str | None = None
    best_value: float | None = None
    best_plan: str = ""
    best_params: dict[str, Any] = Field(default_factory=dict)
    title: str = ""
    groups: dict[str, dict[str, GroupStats]] = Field(
        default_factory=dict, description="group label -> metric -> stats; the first group is the subject"
    )
    plots: list[Path] = Field(default_factory=list, description="absolute paths of PNG artifacts")
    nodes: int = 0
    search_nodes: int = Field(0, description="nodes the search grew (no replicate, aggregation or choice)")
    good: int = 0
    buggy: int = 0


class IdeaResults(BaseModel):
    name: str
    title: str
    hypothesis: str
    abstract: str = ""
    method: str = ""
    method_description: str = ""
    metrics: list[MetricSpec]
    stages: list[StageResult]
    heldout: dict[str, Any] | None = None
    notes_md: str = ""
    best_code: str = ""
    fixed_settings: dict[str, Any] = Field(default_factory=dict)

    @property
    def primary(self) -> MetricSpec:
        return next((m for m in self.metrics if m.primary), self.metrics[0])

    @property
    def final(self) -> StageResult | None:
        """The last stage that produced an aggregate (the paper's main result)."""
        return next((s for s in reversed(self.stages) if s.groups), None)


class RunResults(BaseModel):
    run_dir: Path
    name: str
    mode: str
    seed: int = 0
    replicates: int = 0
    total_nodes: int = 0
    good_nodes: int = 0
    buggy_nodes: int = 0
    wall_s: float = 0.0
    ideas: dict[str, IdeaResults]
    finished_reason: str = ""


def read_run(run_dir: Path, journal: Journal | None = None) -> RunResults:
    """Read a run directory. Raises ConfigError when it is not one or holds no finished stage.
    A caller that already replayed the run's journal (the view) passes it: replaying is most of
    the cost of reading a large run."""
    if not (run_dir / EVENTS_FILE).is_file():
        raise ConfigError(
            f"{run_dir}: not a Silva run directory (no {EVENTS_FILE}); pass the directory `silva run` printed"
        )
    if journal is None:
        journal = Journal.open(run_dir, read_only=True)  # a reader: no lock, never a write
    cfg = journal.config
    ideas: dict[str, IdeaResults] = {}
    names = sorted(
        {idea for idea, _ in journal.stage_ended},
        key=lambda i: min(e.ts for (k, _), e in journal.stage_ended.items() if k == i),
    )
    described = _descriptions(cfg, journal)
    for name in names:
        ideas[name] = _idea(run_dir, journal, name, described.get(name) or described.get("*") or {})
    nodes = [n for n in journal if n.kind not in DOCUMENT_STAGES]  # the paper itself is no experiment
    return RunResults(
        run_dir=run_dir.resolve(),
        name=str(cfg.get("name", run_dir.name)),
        mode="template" if _offline_template(cfg) else "agentic",
        seed=int(cfg.get("seed", 0)),
        replicates=int(cfg.get("replicates", 0)),
        total_nodes=len(nodes),
        good_nodes=sum(n.status == NodeStatus.GOOD for n in nodes),
        buggy_nodes=sum(n.status == NodeStatus.BUGGY for n in nodes),
        wall_s=journal.elapsed_s(),
        ideas=ideas,
        finished_reason=journal.finished.reason
        if journal.finished
        else journal.stop.reason
        if journal.stop
        else "",
    )


def _offline_template(cfg: dict[str, Any]) -> bool:
    """A template run without LLM ideas (with `idea`/`ideas`, the template is only the starting code)."""
    return bool(cfg.get("template")) and not cfg.get("idea") and not cfg.get("ideas")


def _descriptions(cfg: dict[str, Any], journal: Journal) -> dict[str, dict[str, Any]]:
    """Idea name -> title, hypothesis, method, metrics; '*' for the single tree of a template run."""
    metrics = [m.model_dump() for m in journal.metric_specs]
    if _offline_template(cfg):
        path = Path(cfg["template"]) / "template.yaml"
        spec = yaml.safe_load(path.read_text()) if path.is_file() else {}
        method = spec.get("method") or {}
        return {
            "*": {
                "title": spec.get("name", cfg.get("name", "experiment")),
                "hypothesis": " ".join(str(spec.get("description", "")).split()),
                "method": method.get("name", ""),
                "method_description": method.get("description", ""),
                "metrics": spec.get("metrics") or metrics,
                "fixed": spec.get("fixed") or {},
            }
        }
    out: dict[str, dict[str, Any]] = {}
    sources = [cfg["idea"]] if cfg.get("idea") else [i["path"] for i in cfg.get("ideas") or []]
    for source in sources:
        path = Path(source)
        if not path.is_file():
            continue
        data = (
            yaml.safe_load(path.read_text())
            if path.suffix in (".yaml", ".yml")
            else json.loads(path.read_text())
        )
        from search.idea import Idea  # the idea file's own validation (AI-Scientist aliases included)

        idea = Idea.model_validate(data)
        out[idea.name] = {
            "title": idea.title,
            "hypothesis": idea.hypothesis,
            "abstract": idea.abstract,
            "method": idea.title,
            "method_description": "; ".join(idea.experiments),
            "metrics": [m.model_dump() for m in idea.metrics],
        }
    return out


def _idea(run_dir: Path, journal: Journal, name: str, described: dict[str, Any]) -> IdeaResults:
    stages = [
        _stage(run_dir, journal, name, stage)
        for stage in journal.stage_names
        if (name, stage) in journal.stage_ended
    ]
    notes = run_dir / NOTES_DIR / name / "journal.md"
    best_code = ""
    for s in reversed(stages):
        node = journal.nodes.get(s.best_node_id or "")
        if node is not None and node.code:
            best_code = node.code
            break
    metrics = [MetricSpec.model_validate(m) for m in described.get("metrics") or []] or list(
        journal.metric_specs
    )
    return IdeaResults(
        name=name,
        title=described.get("title") or name,
        hypothesis=described.get("hypothesis", ""),
        abstract=described.get("abstract", ""),
        method=described.get("method", ""),
        method_description=described.get("method_description", ""),
        metrics=metrics,
        stages=stages,
        heldout=journal.heldout[name].model_dump(mode="json") if name in journal.heldout else None,
        notes_md=notes.read_text() if notes.is_file() else "",
        best_code=best_code,
        fixed_settings=described.get("fixed", {}),
    )


def _stage(run_dir: Path, journal: Journal, idea: str, stage: str) -> StageResult:
    ended = journal.stage_ended[(idea, stage)]
    decision = journal.stage_best.get((idea, stage))
    nodes = journal.in_stage(stage, idea=idea)
    best: Node | None = journal.nodes.get(ended.best_node_id or "")
    agg: Node | None = journal.nodes.get(ended.aggregate_node_id or "")
    result = StageResult(
        stage=stage,
        ended_because=ended.reason,
        best_node_id=best.id if best else None,
        best_value=decision.value if decision else None,
        best_plan=best.plan if best else "",
        best_params=dict(best.params) if best else {},
        nodes=len(nodes),
        search_nodes=sum(n.kind not in _NOT_SEARCH for n in nodes),
        good=sum(n.status == NodeStatus.GOOD for n in nodes),
        buggy=sum(n.status == NodeStatus.BUGGY for n in nodes),
    )
    plots: list[Path] = []
    for node in (agg, best):
        if node is None:
            continue
        for rel in node.artifacts:
            path = run_dir / rel
            if path.name == "aggregate.json" and path.is_file():
                data = json.loads(path.read_text())
                result.title = str(data.get("title", ""))
                result.groups = _groups(data)
            elif path.suffix == ".png" and path.is_file():
                plots.append(path.resolve())
    result.plots = plots
    return result


def _groups(data: dict[str, Any]) -> dict[str, dict[str, GroupStats]]:
    raw = data.get("values") or {}
    out: dict[str, dict[str, GroupStats]] = {}
    for label, per_metric in (data.get("groups") or {}).items():
        out[label] = {}
        for metric, s in per_metric.items():
            values = [float(v) for v in raw.get(label, {}).get(metric, []) if math.isfinite(float(v))]
            out[label][metric] = GroupStats(mean=s["mean"], std=s["std"], n=s["n"], values=values)
    return out
