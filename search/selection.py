"""The best-node decision of a stage, as a job: the primary metric decides; the LLM breaks ties
and checks sanity, once, on a worker (never on the driver), and the decision is recorded with
every reason (never re-asked on resume).

The LLM may move the decision away from the metric's best node only to a candidate tied with
it (within `search.tie_tolerance`), or when it flags the metric's best as invalid (a leak, a
bug). Anything else it says is recorded and the metric's choice stands.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ConfigDict, model_validator

from engine.llm import LLM, BudgetExceeded, LLMError
from engine.node import AttemptResult, BudgetRefusal, MetricSpec, Node
from search.agentic.operators.prompts import selection_prompt
from search.agentic.operators.schemas import BestChoice
from search.idea import Idea
from search.stages import Selection

SANITY_WIDTH = 3  # candidates shown besides ties, so a suspicious winner has alternatives


class LLMChooser:
    """The `BestChooser` of LLM mode: a `SelectionJob` per decision."""

    def __init__(self, llm: LLM, idea: Idea, tolerance: float, role: str) -> None:
        self.llm, self.idea, self.tolerance, self.role = llm, idea, tolerance, role

    def job_for(self, node: Node, attempt: int, ranked: list[Node], spec: MetricSpec) -> SelectionJob:
        return SelectionJob(
            node.id, attempt, node.stage, ranked, spec, self.llm, self.idea, self.tolerance, self.role
        )


@dataclass
class SelectionJob:
    node_id: str
    attempt: int
    stage: str
    ranked: list[Node]  # the stage's good nodes, best first by the primary metric (at least two)
    spec: MetricSpec
    llm: LLM
    idea: Idea
    tolerance: float
    role: str
    holds_resources: bool = False  # it only waits on the LLM: no slot, no CPUs or GPUs

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        started = time.time()
        try:
            choice = self.choose()
        except BudgetExceeded as e:
            return AttemptResult(status="buggy", refusal=BudgetRefusal(budget="dollars", message=str(e)))
        return AttemptResult(
            status="good",
            reason=f"chose {choice.node_id} ({choice.by})",
            outcome=choice,
            started_at=started,
            finished_at=time.time(),
        )

    def _ask(self, candidates: list[Node]) -> BestChoice:
        """The LLM's choice among the candidates; an id outside them does not validate."""
        ids = [n.id for n in candidates]

        class Choice(BestChoice):
            model_config = ConfigDict(title="BestChoice")

            @model_validator(mode="after")
            def _known(self) -> Choice:
                if self.node_id not in ids:
                    raise ValueError(f"node_id must be one of {ids}")
                return self

        return self.llm.complete(
            selection_prompt(idea=self.idea, stage=self.stage, metric=self.spec, candidates=candidates),
            role=self.role,
            output_type=Choice,
            node_id=self.node_id,
            stage=self.stage,
            idea=self.idea.name,
            attempt=self.attempt,
            blocking=True,  # the stage's decision, and every slot, may wait for it
            context={
                "select": "best",
                "stage": self.stage,
                "idea": self.idea.name,
                "candidates": ",".join(ids),
            },
        )

    def choose(self) -> Selection:
        spec, top = self.spec, self.ranked[0]
        value = top.metric(spec.name)
        tied = [
            n
            for n in self.ranked
            if value is not None and abs((n.metric(spec.name) or 0.0) - value) <= self.tolerance
        ]
        candidates = self.ranked[: max(len(tied), SANITY_WIDTH)]
        base = Selection(
            node_id=top.id,
            by="metric",
            metric_best=top.id,
            candidates=[n.id for n in candidates],
            tied=[n.id for n in tied],
        )
        try:
            answer = self._ask(candidates)
        except BudgetExceeded:
            raise
        except LLMError as e:
            return base.model_copy(update={"llm_error": str(e)[:500]})
        asked = base.model_copy(
            update={
                "llm_choice": answer.node_id,
                "llm_reason": answer.reason,
                "metric_best_is_sane": answer.metric_best_is_sane,
            }
        )
        if answer.node_id == top.id:
            return asked.model_copy(update={"by": "metric, confirmed by the LLM"})
        if answer.node_id in base.tied:
            return asked.model_copy(update={"node_id": answer.node_id, "by": "LLM tie-break"})
        if not answer.metric_best_is_sane:
            return asked.model_copy(
                update={"node_id": answer.node_id, "by": "LLM sanity check (metric best flagged invalid)"}
            )
        return asked.model_copy(
            update={"by": "metric (the LLM's other choice was neither tied nor a sanity override)"}
        )
