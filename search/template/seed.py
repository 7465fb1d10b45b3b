"""Template-based ideas (the AI Scientist v1 mode): the LLM search grown from a human-written
template instead of drafted from nothing.

A run config with `template:` and `idea:` (or `ideas:`) is an agentic run in which the first
stage of every idea's tree starts with one `template` node: the template's experiment script run
as written, with its default settings in silva_params.json. It is a search node (it counts
against the stage's budget and can be the stage's best), but it costs no LLM call: its code is
known. When it is good, it is the first stage's best and the root that the later stages
improve, tune and ablate; when it fails, its line is debugged one step at a time, and only a
line that cannot be debugged further hands the stage to the policy's drafts.

Every node of such a tree (LLM nodes, replicates, held-out re-runs) gets the template's default
settings in silva_params.json and the template's other files in its workspace; the LLM edits
experiment.py. Metrics are the template's: an idea may only declare metrics the template reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.journal import Journal
from engine.node import MetricSpec, Node, NodeStatus, Origin
from search.agentic.operators.job import EXPERIMENT
from search.idea import Idea
from search.template.spec import TEMPLATE_FILE, Template

TEMPLATE_KIND = "template"
COMMAND = ["{python}", EXPERIMENT]  # the LLM operators run `python experiment.py` and nothing else


@dataclass(frozen=True)
class TemplateSeed:
    """What an idea's tree takes from its template."""

    name: str
    description: str
    code: str  # the template's experiment.py
    params: dict[str, Any]  # its default settings: silva_params.json "params" of every node
    files: dict[str, Path]  # its other files, copied into every workspace (workspace path -> host file)
    metrics: list[MetricSpec]

    @classmethod
    def from_template(cls, template: Template) -> TemplateSeed:
        where = template.root / TEMPLATE_FILE
        if template.spec.command != COMMAND:
            raise ConfigError(
                f"{where}: command = {template.spec.command!r}: a template grown by the LLM search must run "
                f"{' '.join(COMMAND)!r} (the LLM edits {EXPERIMENT}); rename its script to {EXPERIMENT} and "
                "drop extra arguments, or run the template offline (remove `idea`/`ideas` from the run "
                "config)"
            )
        if EXPERIMENT not in template.files:
            raise ConfigError(f"{where}: files = {sorted(template.files)!r}: {EXPERIMENT} must be among them")
        try:
            code = template.files[EXPERIMENT].decode()
        except UnicodeDecodeError:
            raise ConfigError(
                f"{template.root / EXPERIMENT}: not UTF-8 text; the LLM cannot edit it"
            ) from None
        return cls(
            name=template.spec.name,
            description=" ".join(template.spec.description.split()),
            code=code,
            params=template.spec.defaults(),
            files={n: template.root / n for n in template.files if n != EXPERIMENT},
            metrics=list(template.spec.metrics),
        )

    def adapt(self, idea: Idea) -> Idea:
        """The idea with the template's metrics; an idea metric the template does not report (or
        reports in the other direction) is a clear error before anything runs."""
        known = {m.name: m for m in self.metrics}
        for m in idea.metrics:
            if m.name not in known:
                raise ConfigError(
                    f"idea {idea.name!r}: metric {m.name!r} is not reported by template {self.name!r} "
                    f"(it reports {', '.join(known)}); a template-based idea uses the template's metrics: "
                    "declare those in the idea file"
                )
            if m.direction != known[m.name].direction:
                raise ConfigError(
                    f"idea {idea.name!r}: metric {m.name!r} is {m.direction} but template {self.name!r} "
                    f"declares it {known[m.name].direction}; use the template's direction"
                )
        return idea.model_copy(update={"metrics": [m.model_copy() for m in self.metrics]})

    def node(self, idea: str, stage: str, seed: int) -> Node:
        what = f": {self.description}" if self.description else ""
        return Node(
            stage=stage,
            kind=TEMPLATE_KIND,
            idea=idea,
            code=self.code,
            params=dict(self.params),
            seed=seed,
            plan=f"the template {self.name}'s experiment as written, with its default settings{what}",
            origin=Origin(policy=TEMPLATE_KIND, label=f"template {self.name}"),
        )


def template_start(
    seed: TemplateSeed,
    journal: Journal,
    idea: str,
    stage: str,
    nodes: list[Node],
    run_seed: int,
    max_debug_depth: int,
) -> list[Node] | None:
    """The first stage's next nodes while it grows from the template: the template node, then one
    debug at a time along its line while it fails. None: the line cannot be debugged further, so
    the policy takes over (drafts). [] while the line's latest node runs."""
    root = next((n for n in nodes if n.kind == TEMPLATE_KIND), None)
    if root is None:
        return [seed.node(idea, stage, run_seed)]
    leaf = root
    while True:
        fixes = [n for n in journal.children(leaf.id) if n.kind == "debug" and n.stage == stage]
        if not fixes:
            break
        leaf = fixes[-1]
    if not leaf.is_finished:
        return []
    if leaf.status == NodeStatus.BUGGY and leaf.code and journal.debug_depth(leaf.id) < max_debug_depth:
        return [
            Node(
                parent_id=leaf.id,
                stage=stage,
                kind="debug",
                idea=idea,
                plan=f"debug of {leaf.id}",
                seed=run_seed,
                origin=Origin(policy=TEMPLATE_KIND),
            )
        ]
    return None
