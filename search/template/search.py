"""Offline search on a template (no LLM): the search phase of each of the four stages.

- preliminary: the baseline (defaults, method off); ends at its first good node.
- hyperparameter: settings from the proposer (Sobol or RBF surrogate), method off.
- agenda: the method switched on, first at the best setting so far, then proposer settings.
- ablation: the agenda's best with one ablation switched on, each ablation once.
"""

from __future__ import annotations

import sys
from typing import Any

from engine.attempt import ExperimentJob
from engine.journal import Journal
from engine.node import Node, NodeStatus, Origin
from sandbox.base import Limits
from search.config import SearchSettings
from search.stages import StageNodes
from search.template.proposers import Proposer, Tried
from search.template.spec import Template

KIND_OF_STAGE = {
    "preliminary": "baseline",
    "hyperparameter": "hyperparameter",
    "agenda": "method",
    "ablation": "ablation",
}


class TemplateSearch:
    def __init__(
        self, cfg: SearchSettings, template: Template, journal: Journal, idea: str = "default"
    ) -> None:
        self.cfg, self.template, self.journal = cfg, template, journal
        self.idea = idea  # a template forest (search/template/forest.py) has one search per variant
        self.spec = template.spec
        space = self.spec.hyperparameters
        # Stage 2 tunes the baseline, so the method's own knobs are left out of its search.
        self.proposers = {
            "hyperparameter": Proposer(
                {k: p for k, p in space.items() if not p.method_only}, cfg.seed, cfg.proposer
            ),
            "agenda": Proposer(space, cfg.seed, cfg.proposer),
        }
        self.tried = {stage: Tried(p.names) for stage, p in self.proposers.items()}
        self._views: dict[str, StageNodes] = {}

    def _nodes(self, journal: Journal, stage: str) -> list[Node]:
        """The stage's search nodes, oldest first, read incrementally (StageNodes): the
        proposer's tried set then grows by the new ones only. Not to be changed."""
        view = self._views.get(stage)
        if view is None or view.journal is not journal:
            view = self._views[stage] = StageNodes(journal, self.idea, stage)
        return view.refresh().kinds.get(KIND_OF_STAGE[stage], [])

    # -- StageSearch ------------------------------------------------------------------------
    def search_done(self, journal: Journal, stage: str, root: Node | None) -> str | None:
        nodes = self._nodes(journal, stage)
        if stage == "preliminary" and any(n.status == NodeStatus.GOOD for n in nodes):
            return "first good baseline"
        if stage == "ablation" and len(nodes) >= len(self.spec.ablations):
            return f"all {len(self.spec.ablations)} ablation(s) run"
        if (
            stage in self.proposers
            and not self.proposers[stage].names
            and (nodes or stage == "hyperparameter")
        ):
            return "no hyperparameters to search"
        if stage in self.proposers and self._exhausted(stage, nodes, root):
            size = self.proposers[stage].size
            return f"candidate pool exhausted: every setting of {size} Sobol points tried"
        return None

    def _exhausted(self, stage: str, nodes: list[Node], root: Node | None) -> bool:
        """Every setting the stage's pool can name is tried: the stage closes with that reason
        rather than the run stopping as "stuck" (a tuning stage larger than the pool)."""
        proposer = self.proposers[stage]
        if not proposer.names:
            return False
        extra = {self.tried[stage].key(root.params)} if root is not None else set()
        return not proposer.untried(self.tried[stage].update(nodes), 1, extra)

    def propose(self, journal: Journal, stage: str, root: Node | None, slots: int) -> list[Node]:
        kind = KIND_OF_STAGE[stage]
        nodes = self._nodes(journal, stage)
        base = dict(root.params) if root else self.spec.defaults()
        if stage == "preliminary":
            if any(not n.is_finished for n in nodes):
                return []  # one baseline at a time: a failure is usually deterministic
            return [self._node(stage, kind, root, self.spec.defaults(), "baseline with default settings")]
        if stage == "ablation":
            done = {n.origin.ablation for n in nodes}
            todo = [a for a in self.spec.ablations if a.name not in done][:slots]
            return [
                self._node(
                    stage,
                    kind,
                    root,
                    {**base, a.param: a.value},
                    f"ablation {a.name}: {a.description}".strip(": "),
                    ablation=a.name,
                )
                for a in todo
            ]
        method_on = stage == "agenda"
        base[self.spec.method.param] = method_on
        out: list[Node] = []
        if method_on and not nodes:
            out.append(
                self._node(
                    stage, kind, root, base, f"method {self.spec.method.name} at the best setting so far"
                )
            )
        proposer = self.proposers[stage]
        seen = self.tried[stage].update(nodes)
        # The surrogate keeps its picks away from everything tried; Sobol order needs only the keys.
        tried = [o.params for o in out] + ([root.params] if root is not None else [])
        scored = self._scored(nodes, root) if proposer.kind != "sobol" else []
        if scored:
            tried += [n.params for n in nodes]
        for setting in proposer.propose(slots - len(out), tried, scored, seen):
            params = {**base, **setting}
            out.append(self._node(stage, kind, root, params, self._describe(setting)))
        return out

    def job_for(self, node: Node, attempt: int) -> ExperimentJob:
        python = "python3" if self.cfg.sandbox.provider == "docker" else sys.executable
        res = self.cfg.resources_for(node.kind)
        return ExperimentJob(
            node_id=node.id,
            attempt=attempt,
            run_dir=self.journal.log.path.parent,
            files=self.template.files,
            command=[c.replace("{python}", python) for c in self.spec.command],
            params=node.params,
            seed=node.seed,
            stage=node.stage,
            metrics=self.spec.metrics,
            limits=Limits(wall_s=self.cfg.budgets.node_timeout_s, memory_mb=res.memory_mb),
            sandbox=self.cfg.sandbox.provider,
            sandbox_options=self.cfg.sandbox.options,
        )

    def label(self, node: Node) -> str:
        if node.origin.ablation:
            return f"ablation: {node.origin.ablation}"
        return {
            "baseline": "baseline",
            "hyperparameter": "tuned baseline",
            "method": self.spec.method.name,
        }.get(node.kind, node.origin.label or node.kind)

    # -- helpers ----------------------------------------------------------------------------
    def _node(
        self, stage: str, kind: str, root: Node | None, params: dict[str, Any], plan: str, ablation: str = ""
    ) -> Node:
        return Node(
            parent_id=root.id if root else None,
            stage=stage,
            kind=kind,
            idea=self.idea,
            plan=plan,
            params=params,
            seed=self.cfg.seed,
            origin=Origin(ablation=ablation),
        )

    def _scored(self, nodes: list[Node], root: Node | None) -> list[tuple[dict[str, Any], float]]:
        """(setting, oriented primary metric) of the good nodes: what the surrogate learns from."""
        spec = self.spec.primary
        return [
            (n.params, s) for n in [*nodes, *([root] if root else [])] if (s := spec.score(n)) is not None
        ]

    def _describe(self, setting: dict[str, Any]) -> str:
        return "try " + ", ".join(f"{k}={v}" for k, v in sorted(setting.items()))
