"""The ideation loop: each new idea mutates (or combines) archived ones, is reflected on and
improved, checked for duplicates against the archive, then checked for novelty against the
literature over several query rounds, and saved before the next idea is started.

Each call names its step in the request's `context` (`{"step": "generate"}`...), which an
offline scripted model answers by and no real model is sent (engine/llm/types.py).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, model_validator

from engine.errors import ConfigError
from engine.llm import EMBEDDING_ROLE, LLM, Message, StructuredOutputError
from engine.llm.prompt_budget import Part
from engine.node import MetricSpec
from search.idea import Idea
from silva.ideation.archive import Archive, IdeaRecord, Novelty, NoveltyRound, Scores
from silva.ideation.config import TopicConfig
from silva.ideation.similarity import idea_text, most_similar
from writeup.literature import Literature, LiteratureError, Paper

SYSTEM = (
    "You are an ambitious, careful AI researcher. You propose experiments a small compute budget can run, "
    "you judge your own ideas honestly, and you check them against published work."
)
MAX_TEMPLATE_CHARS = 20_000
T = TypeVar("T", bound=BaseModel)
# Bounded strings: a small model's grammar-constrained answer must close each within max_tokens.
# The bounds together stay near 2,000 characters: the whole idea fits a 512-token answer.
Point = Annotated[str, Field(max_length=160)]


class IdeaDraft(BaseModel):
    """A research idea that one experiment tree can test."""

    name: str = Field(max_length=40, description="short slug: lowercase letters, digits and underscores")
    title: str = Field(min_length=1, max_length=150)
    hypothesis: str = Field(min_length=1, max_length=300, description="one falsifiable sentence")
    abstract: str = Field(
        min_length=1, max_length=600, description="a short conference-style abstract of the intended paper"
    )
    experiments: list[Point] = Field(
        min_length=1, max_length=3, description="the planned experiments, one per item"
    )
    risks: list[Point] = Field(default_factory=list, max_length=3, description="risk factors and limitations")
    metrics: list[MetricSpec] = Field(
        default_factory=list, description="metrics results.json reports; one primary"
    )
    interestingness: int = Field(ge=1, le=10)
    novelty: int = Field(ge=1, le=10)
    feasibility: int = Field(ge=1, le=10)


class Reflection(BaseModel):
    """Your critique of the idea and the improved idea."""

    critique: str = Field(min_length=1, max_length=600)
    idea: IdeaDraft
    done: bool = Field(description="true if the idea needs no further change")


class NoveltyStep(BaseModel):
    """Either a literature query to run next, or your decision on the idea's novelty."""

    decision: Literal["search", "novel", "not_novel"]
    query: str = Field("", max_length=150, description="with decision=search: the search query")
    reason: str = Field("", max_length=400, description="with a decision: why, naming the closest papers")
    closest: list[Annotated[str, Field(max_length=80)]] = Field(
        default_factory=list, max_length=5, description="ids of the papers closest to the idea"
    )

    @model_validator(mode="after")
    def _query(self) -> NoveltyStep:
        if self.decision == "search" and not self.query.strip():
            raise ValueError("decision=search needs a query")
        return self


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:48] or "idea"


def template_context(directory: Path) -> str:
    """template.yaml and the template's Python files, for the prompt."""
    parts = [f"template.yaml:\n{(directory / 'template.yaml').read_text()}"]
    for f in sorted(directory.glob("*.py")):
        parts.append(f"{f.name}:\n{f.read_text()}")
    return "\n\n".join(parts)[:MAX_TEMPLATE_CHARS]


class Ideator:
    def __init__(
        self,
        cfg: TopicConfig,
        llm: LLM,
        literature: Literature | None,
        archive: Archive,
        literature_error: str = "",
    ) -> None:
        self.cfg, self.llm, self.literature, self.archive = cfg, llm, literature, archive
        self.literature_error = literature_error
        self.rng = random.Random(cfg.seed + len(archive.records))
        self.fixed_metrics = list(cfg.metrics)
        if not self.fixed_metrics and cfg.template is not None:
            from search.template.spec import Template

            self.fixed_metrics = list(Template.load(cfg.template).spec.metrics)
        self.context = template_context(cfg.template) if cfg.template is not None else ""
        # Duplicates are judged on the gateway's embeddings when the topic maps an embedding role.
        self.embedder = llm if EMBEDDING_ROLE in cfg.llm.roles else None

    def ask(self, step: str, body: str, output: type[T]) -> T:
        return self.llm.complete(
            [Message.system(SYSTEM), Message.user(body)],
            role=self.cfg.role,
            output_type=output,
            context={"step": step},
        )

    def run(
        self,
        on_idea: Callable[[IdeaRecord], None] = lambda r: None,
        on_failure: Callable[[str], None] = lambda why: None,
    ) -> list[IdeaRecord]:
        """Up to `num_ideas` new ideas. An idea whose answers never validated (after the bounded
        re-asks) is reported to `on_failure` and skipped: the archive keeps the others."""
        made = []
        for _ in range(self.cfg.num_ideas):
            try:
                record = self.one()
            except StructuredOutputError as e:
                on_failure(str(e))
                continue
            on_idea(record)
            made.append(record)
        return made

    # -- one idea --------------------------------------------------------------------------------
    def one(self) -> IdeaRecord:
        kept = [r for r in self.archive.records if r.status != "duplicate"]
        parents = self.rng.sample(kept, min(len(kept), self.rng.choice((1, 2)))) if kept else []
        draft = self.ask("generate", self._generate_prompt(parents), IdeaDraft)
        for round_ in range(self.cfg.reflections):
            reflection = self.ask("reflect", self._reflect_prompt(draft, round_), Reflection)
            draft = reflection.idea
            if reflection.done:
                break
        idea = self._idea(draft)
        dump = idea.model_dump(mode="json", exclude_defaults=True)
        scores = Scores(
            interestingness=draft.interestingness, novelty=draft.novelty, feasibility=draft.feasibility
        )
        common = {
            "name": idea.name,
            "idea": dump,
            "scores": scores,
            "parents": [p.name for p in parents],
            "template": str(self.cfg.template) if self.cfg.template else None,
        }
        others = [r for r in self.archive.records if r.status != "duplicate"]
        closest = most_similar(idea_text(dump), [idea_text(r.idea) for r in others], self.embedder)
        if closest is not None and closest[1] >= self.cfg.max_similarity:
            twin = others[closest[0]]
            method = "embedding" if self.embedder is not None else "TF-IDF"
            novelty = Novelty(
                verdict="duplicate",
                reason=f"{method} similarity {closest[1]:.2f} to {twin.name} "
                f"(threshold {self.cfg.max_similarity})",
            )
            record = IdeaRecord(
                **common, status="duplicate", novelty=novelty, duplicate_of=twin.name, similarity=closest[1]
            )
        else:
            novelty, papers = self._novelty(idea)
            record = IdeaRecord(
                **common,
                status=novelty.verdict,
                novelty=novelty,
                papers=[p.model_dump(mode="json") for p in papers],
                similarity=closest[1] if closest else None,
            )
        return self.archive.add(record, idea)

    def _idea(self, draft: IdeaDraft) -> Idea:
        name, n = _slug(draft.name or draft.title), 1
        while (f"{name}_{n}" if n > 1 else name) in self.archive.names():
            n += 1
        metrics = self.fixed_metrics or draft.metrics
        try:
            return Idea.model_validate(
                {
                    "name": f"{name}_{n}" if n > 1 else name,
                    "title": draft.title,
                    "hypothesis": draft.hypothesis,
                    "abstract": draft.abstract,
                    "experiments": draft.experiments,
                    "risks": draft.risks,
                    "metrics": [m.model_dump() for m in metrics],
                    "datasets": self.cfg.datasets,
                }
            )
        except ValidationError as e:
            raise ConfigError(
                f"ideation: the model's idea {draft.title!r} is not a valid idea: "
                f"{e.errors()[0]['msg']}; declare `metrics:` in the topic file"
            ) from None

    def _novelty(self, idea: Idea) -> tuple[Novelty, list[Paper]]:
        if self.literature is None:
            return Novelty(verdict="unchecked", error=self.literature_error), []
        papers: dict[str, Paper] = {}
        rounds: list[NoveltyRound] = []
        for round_ in range(self.cfg.novelty_rounds + 1):
            last = round_ == self.cfg.novelty_rounds
            step = self.ask("novelty", self._novelty_prompt(idea, papers, rounds, last), NoveltyStep)
            if step.decision != "search" and rounds:  # a decision counts only after one search at least
                closest = [c for c in step.closest if c in papers]
                return Novelty(
                    verdict=step.decision, reason=step.reason, closest=closest, rounds=rounds
                ), list(papers.values())
            if last:
                break
            query = step.query if step.decision == "search" else idea.title
            try:
                found = self.literature.search(query, limit=self.cfg.papers_per_query)
            except LiteratureError as e:
                return Novelty(verdict="unchecked", error=str(e), rounds=rounds), list(papers.values())
            rounds.append(NoveltyRound(query=query, papers=[p.id for p in found]))
            papers.update((p.id, p) for p in found)
        reason = (
            f"no decision after {len(rounds)} literature round(s); nothing found was judged the same idea"
        )
        return Novelty(verdict="novel", reason=reason, rounds=rounds), list(papers.values())

    # -- prompts ---------------------------------------------------------------------------------
    def fit(self, *parts: Part) -> str:
        """A prompt cut by priority to the ideation model's context less its max_tokens."""
        return self.llm.budget(self.cfg.role).fit(parts, fixed=SYSTEM)

    def _topic(self) -> list[Part]:
        """The topic and metrics whole; the template's code as far as the context allows."""
        parts = []
        if self.cfg.topic.strip():
            topic = f"Research topic:\n{self.cfg.topic.strip()}\n\n"
            parts.append(Part(topic, min_chars=min(len(topic), 2000)))
        if self.context:
            context = (
                "Ideas must extend this human-written experiment template (its code and declared "
                "hyperparameters, method switch, ablations and metrics); propose what to add or change:\n"
                + self.context
                + "\n\n"
            )
            parts.append(Part(context, priority=3, min_chars=min(len(context), 1500)))
        if self.fixed_metrics:
            metrics = ", ".join(
                f"{m.name} ({m.direction}{', primary' if m.primary else ''})" for m in self.fixed_metrics
            )
            parts.append(
                Part(f"Every idea reports these metrics: {metrics}\n\n", min_chars=len(metrics) + 40)
            )
        return parts

    def _generate_prompt(self, parents: list[IdeaRecord]) -> str:
        archive = (
            "\n".join(
                f"- {r.name}: {r.idea.get('title', '')} — {r.idea.get('hypothesis', '')} [{r.status}]"
                for r in self.archive.records[-30:]
            )
            or "(empty)"
        )
        if parents:
            base = "\n\n".join(
                f"Parent idea {p.name}:\n{Idea.model_validate(p.idea).describe()}" for p in parents
            )
            task = (
                "Mutate the parent idea(s) above into a new idea: change the mechanism, combine the parents, "
                "or test a consequence they leave open. It must differ clearly from every archived idea."
            )
        else:
            base, task = "", "Propose a first idea for this topic."
        return self.fit(
            *self._topic(),
            Part(f"Archived ideas:\n{archive}\n\n", priority=4, min_chars=min(len(archive) + 20, 600)),
            Part(f"{base}\n\n", priority=2, min_chars=min(len(base), 1500)),
            Part(
                f"{task} Score it honestly from 1 to 10 for interestingness, novelty and feasibility "
                "(a small compute budget, one experiment tree).",
                min_chars=400,
            ),
        )

    def _reflect_prompt(self, draft: IdeaDraft, round_: int) -> str:
        idea = draft.model_dump_json(indent=1)
        return self.fit(
            *self._topic(),
            Part(
                f"Reflection round {round_ + 1} of {self.cfg.reflections}. Your idea:\n{idea}\n\n",
                min_chars=len(idea) + 60,
            ),
            Part(
                "Criticise it: is the hypothesis falsifiable, are the experiments feasible and sufficient, "
                "are the scores honest? Return the improved idea, and done=true if it needs no further "
                "change.",
                min_chars=300,
            ),
        )

    def _novelty_prompt(
        self, idea: Idea, papers: dict[str, Paper], rounds: list[NoveltyRound], last: bool
    ) -> str:
        found = "\n".join(
            p.summary() + (f"\n  {p.abstract[:400]}" if p.abstract else "") for p in papers.values()
        )
        queries = "\n".join(f"- {r.query} ({len(r.papers)} papers)" for r in rounds) or "(none yet)"
        if last:
            task = "This is the last round: decide, decision=novel or decision=not_novel."
        elif not rounds:
            task = "Give the first search query (decision=search)."
        else:
            task = (
                "Either search again (decision=search, a new query) or decide (decision=novel or "
                "decision=not_novel). not_novel means a found paper already tests essentially this "
                "hypothesis."
            )
        described = f"Is this idea novel?\n{idea.describe()}\n\n"
        return self.fit(
            Part(described, min_chars=min(len(described), 2000)),
            Part(f"Queries so far:\n{queries}\n\n", priority=2),
            Part(f"Papers found:\n{found or '(none yet)'}\n\n", priority=1, min_chars=min(len(found), 1000)),
            Part(f"{task} List the ids of the closest papers.", min_chars=len(task) + 40),
        )
