"""The best-node decision of a stage: the primary metric decides; the LLM breaks ties and
checks sanity, once, and the decision is recorded with every reason (never re-asked on resume).

The LLM may move the decision away from the metric's best node only to a candidate tied with
it (within `search.tie_tolerance`), or when it flags the metric's best as invalid (a leak, a
bug). Anything else it says is recorded and the metric's choice stands.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, model_validator

from engine.dispatch import BudgetStop
from engine.llm import LLM, BudgetExceeded, LLMError
from engine.node import MetricSpec, Node
from search.idea import Idea
from search.operators.prompts import selection_prompt
from search.operators.schemas import BestChoice

SANITY_WIDTH = 3  # candidates shown besides ties, so a suspicious winner has alternatives


class LLMChooser:
    def __init__(self, llm: LLM, idea: Idea, tolerance: float, role: str) -> None:
        self.llm, self.idea, self.tolerance, self.role = llm, idea, tolerance, role

    def choose(self, stage: str, ranked: list[Node], spec: MetricSpec) -> tuple[Node, dict[str, Any]]:
        """`ranked`: the stage's good nodes, best first by the primary metric (at least two)."""
        top = ranked[0]
        value = top.metric(spec.name)
        tied = [n for n in ranked if value is not None and abs((n.metric(spec.name) or 0.0) - value) <= self.tolerance]
        candidates = ranked[: max(len(tied), SANITY_WIDTH)]
        ids = [n.id for n in candidates]

        class Choice(BestChoice):
            model_config = ConfigDict(title="BestChoice")

            @model_validator(mode="after")
            def _known(self) -> Choice:
                if self.node_id not in ids:
                    raise ValueError(f"node_id must be one of {ids}")
                return self

        record: dict[str, Any] = {"metric_best": top.id, "candidates": ids, "tied": [n.id for n in tied]}
        try:
            answer = self.llm.complete(
                selection_prompt(idea=self.idea, stage=stage, metric=spec, candidates=candidates),
                role=self.role, output_type=Choice, stage=stage, idea=self.idea.name,
            )
        except BudgetExceeded as e:
            raise BudgetStop("dollars", str(e)) from None
        except LLMError as e:
            return top, {**record, "by": "metric", "llm_error": str(e)[:500]}
        record.update(llm_choice=answer.node_id, llm_reason=answer.reason, metric_best_is_sane=answer.metric_best_is_sane)
        chosen = next(n for n in candidates if n.id == answer.node_id)
        if chosen.id == top.id:
            return top, {**record, "by": "metric, confirmed by the LLM"}
        if chosen.id in record["tied"]:
            return chosen, {**record, "by": "LLM tie-break"}
        if not answer.metric_best_is_sane:
            return chosen, {**record, "by": "LLM sanity check (metric best flagged invalid)"}
        return top, {**record, "by": "metric (the LLM's other choice was neither tied nor a sanity override)"}
