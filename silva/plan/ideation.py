"""A rolling forest's ideation as a plan simulates it: every idea asked for admitted at once,
its calls charged afterwards."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from engine.events import IdeaAdmitted
from engine.journal import Journal
from engine.llm import LLM
from engine.llm.config import LLMConfig, Price
from search.idea import Idea
from search.rolling import IdeaSupply, Offer
from silva.plan.executor import PlanExecutor
from silva.plan.settings import DEFAULT_ROLES
from silva.rolling import IdeationSection


class PlannedIdeas:
    """The idea source of a planned rolling forest (search/rolling.py `IdeaSupply`): every idea
    asked for is admitted at once, with the section's metrics: the plan assumes ideation keeps
    ahead of the slots and reports the supply rate that takes (ideas admitted per hour)."""

    def __init__(self, section: IdeationSection) -> None:
        self.settings, self.made, self.ready = section, 0, list[Offer]()

    def ask(self, n: int, known: Collection[Idea]) -> None:
        for _ in range(n):
            self.made += 1
            idea = Idea(
                name=f"planned_{self.made}",
                title=f"planned idea {self.made}",
                hypothesis="simulated by silva plan",
                metrics=self.settings.metrics,
            )
            self.ready.append(Offer(idea, True, "novel"))

    def busy(self) -> bool:
        return False

    def take(self, wait: bool) -> list[Offer]:
        out, self.ready = self.ready, []
        return out


class PlannedIdeation(IdeationSection):
    """A run's `ideation:` section as `silva plan` binds it: to `PlannedIdeas`, no model called."""

    def supply(self, llm_cfg: LLMConfig, template: Path | None, llm: LLM, journal: Journal) -> IdeaSupply:
        return PlannedIdeas(self)

    def calls_per_idea(self) -> int:
        return 2 + self.reflections + self.novelty_rounds  # a draft, reflections, rounds and a decision


def charge_ideation(
    ex: PlanExecutor, journal: Journal, section: PlannedIdeation, price: dict[str, Price]
) -> None:
    """Each admitted idea's ideation calls at the ideation role's model's price (else code's)."""
    admitted = sum(1 for _ in journal.log.read(IdeaAdmitted))
    role = ex.source.settings.llm.get("ideation") or DEFAULT_ROLES["ideation"]
    model = price.get("ideation") or price.get("code")
    calls = admitted * section.calls_per_idea()
    ex.llm_calls["ideation"] += calls
    if model is not None:
        ex.dollars += calls * model.dollars(role.input_tokens, role.output_tokens, 0)
