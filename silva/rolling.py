"""The idea source of a rolling forest (`ideation:` in the run config), bound to silva/ideation.

The forest (search/rolling.py) asks for ideas when its trees cannot fill the slots; here they
are made by the same Ideator as `silva ideate` (generate, reflect, duplicate check against the
archive, novelty against the literature), in a background thread so that the driver keeps
consuming completions, then checked once more against the ideas already in the forest. The
archive is the run's `ideas/` directory unless `archive:` names a shared one.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from engine.errors import ConfigError
from engine.events import IdeaAdmitted, IdeaPublished, IdeaRejected, IdeationEnded
from engine.journal import Journal
from engine.llm import EMBEDDING_ROLE, LLM, StructuredOutputError
from engine.llm.config import LLMConfig
from engine.node import MetricSpec
from search.idea import Idea
from search.rolling import IdeaSupply, Offer, RollingSettings
from silva.ideation.archive import Archive, IdeaRecord
from silva.ideation.config import TopicConfig
from writeup.config import LiteratureConfig

if TYPE_CHECKING:  # the Ideator and its similarity tools load only when a rolling forest runs
    from silva.ideation.ideate import Ideator

ARCHIVE_DIR = "ideas"


class IdeationSection(RollingSettings):
    """`ideation:` of a run config: what `silva ideate` takes in a topic file (but the models,
    which are the run's `llm:`, role `ideation` or else `code`), and the rolling settings."""

    topic: str = Field(min_length=1, description="the research area and question, in a few paragraphs")
    metrics: list[MetricSpec] = Field(min_length=1, description="metrics every new idea reports; one primary")
    datasets: list[Path] = Field(default_factory=list, description="data files every idea's experiments get")
    reflections: int = Field(2, ge=0, description="rounds in which the LLM criticises and improves each idea")
    novelty_rounds: int = Field(
        3, ge=1, description="literature queries per idea before the novelty decision"
    )
    papers_per_query: int = Field(8, ge=1, le=100)
    max_similarity: float = Field(
        0.8, gt=0, le=1, description="an idea this similar (cosine) to a known one is a duplicate"
    )
    literature: LiteratureConfig = Field(default_factory=LiteratureConfig)
    archive: Path | None = Field(
        None, description="an idea archive shared across runs; default: the run's ideas/"
    )
    seed: int = 0

    def resolved(self, base: Path) -> IdeationSection:
        """Paths relative to the config file, as `template` and `idea` are."""
        datasets = [p if p.is_absolute() else (base / p).resolve() for p in self.datasets]
        archive = (
            self.archive if self.archive is None or self.archive.is_absolute() else (base / self.archive)
        )
        return self.model_copy(update={"datasets": datasets, "archive": archive})

    def supply(self, llm_cfg: LLMConfig, template: Path | None, llm: LLM, journal: Journal) -> IdeaSupply:
        """The idea source this section describes (`silva plan` binds a simulated one)."""
        from silva.ideation.ideate import Ideator
        from writeup.literature import LiteratureError, open_literature

        try:
            literature, why = open_literature(self.literature), ""
        except LiteratureError as e:
            literature, why = None, str(e)
        archive = Archive(self.archive or journal.log.path.parent / ARCHIVE_DIR)
        ideator = Ideator(self.topic_config(llm_cfg, template), llm, literature, archive, why)
        supply = IdeationSupply(self, ideator, llm if EMBEDDING_ROLE in llm_cfg.roles else None)
        if self.archive is None:  # a shared archive's other ideas belong to other runs
            decided = journal.log.read(IdeaAdmitted, IdeaRejected)
            supply.pending({e.idea for e in decided if isinstance(e, IdeaAdmitted | IdeaRejected)})
        return supply

    def topic_config(self, llm: LLMConfig, template: Path | None) -> TopicConfig:
        return TopicConfig(
            topic=self.topic,
            template=template,
            metrics=self.metrics,
            datasets=self.datasets,
            num_ideas=1,
            reflections=self.reflections,
            novelty_rounds=self.novelty_rounds,
            papers_per_query=self.papers_per_query,
            max_similarity=self.max_similarity,
            seed=self.seed,
            llm=llm,
            literature=self.literature,
        )


class IdeationSupply:
    """Implements search.rolling.IdeaSupply over an Ideator, one background request at a time."""

    def __init__(self, section: IdeationSection, ideator: Ideator, embedder: LLM | None) -> None:
        self.settings, self.ideator, self.embedder = section, ideator, embedder
        self._offers: list[Offer] = []
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        # Each known idea's text, by name (a forest's ideas never change): dumped afresh at every
        # ask, the driver's thread paid O(ideas) model dumps per admission, O(ideas^2) a run.
        self._texts: dict[str, str] = {}

    def pending(self, decided: set[str]) -> None:
        """Kept ideas of the archive that the forest never decided on (made just before a crash):
        offered first, so a resume does not pay for them again."""
        for r in self.ideator.archive.records:
            if r.kept and r.name not in decided:
                self._offers.append(Offer(_idea(r), True, r.status, similarity=r.similarity))

    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def ask(self, n: int, known: Collection[Idea]) -> None:
        texts = [self._text(i) for i in known]
        self._thread = threading.Thread(target=self._make, args=(n, texts), name="ideation", daemon=True)
        self._thread.start()

    def _text(self, idea: Idea) -> str:
        text = self._texts.get(idea.name)
        if text is None:
            from silva.ideation.similarity import idea_text

            text = self._texts[idea.name] = idea_text(idea.model_dump(mode="json"))
        return text

    def take(self, wait: bool) -> list[Offer]:
        if wait and self._thread is not None:
            self._thread.join()
        with self._lock:
            offers, self._offers = self._offers, []
            error, self._error = self._error, None
        if error is not None:  # a budget stop or a broken gateway: the driver's to handle
            raise error
        return offers

    def _make(self, n: int, known: list[str]) -> None:
        from silva.ideation.similarity import idea_text

        try:
            for _ in range(n):
                offer = self._one(known)
                known.append(idea_text(offer.idea.model_dump(mode="json")))
                with self._lock:
                    self._offers.append(offer)
        except BaseException as e:  # re-raised on the driver's thread by `take`
            with self._lock:
                self._error = e

    def _one(self, known: list[str]) -> Offer:
        from silva.ideation.similarity import idea_text, most_similar

        try:
            record = self.ideator.one()
        except (StructuredOutputError, ConfigError) as e:
            bad = Idea(name="invalid", title="invalid", hypothesis="invalid", metrics=self.settings.metrics)
            return Offer(bad, False, "invalid", str(e)[:500])
        idea = _idea(record)
        if not record.kept and record.status != "unchecked":
            why = record.novelty.reason or record.status
            return Offer(idea, False, record.status, why, record.similarity)
        closest = most_similar(idea_text(record.idea), known, self.embedder)
        if closest is not None and closest[1] >= self.settings.max_similarity:
            return Offer(
                idea,
                False,
                "duplicate",
                f"similarity {closest[1]:.2f} to an idea already in the forest "
                f"(threshold {self.settings.max_similarity})",
                closest[1],
            )
        return Offer(idea, True, record.status, record.novelty.reason, closest[1] if closest else None)


def _idea(record: IdeaRecord) -> Idea:
    return Idea.model_validate({**record.idea, "name": record.name})


def idea_supply(
    section: IdeationSection | None,
    llm_cfg: LLMConfig | None,
    template: Path | None,
    llm: LLM | None,
    journal: Journal,
) -> IdeaSupply | None:
    """The run's idea source, or None when the config has no `ideation:` section."""
    if section is None or llm is None or llm_cfg is None:
        return None
    return section.supply(llm_cfg, template, llm, journal)


class IdeaStates(BaseModel):
    """A rolling forest's ideas by where they stand (`silva status`, its --json, the view)."""

    admitted: list[str]  # in the order admitted
    running: list[str]  # admitted, neither retired nor published: searching, writing or waiting
    retired: list[str]  # stopped before their paper: by the allocation policy or their own budget
    published: list[str]
    rejected: dict[str, int]  # ideas not admitted, by verdict
    ended: str | None  # why ideation ended; None while it goes on


def idea_states(journal: Journal) -> IdeaStates | None:
    """None: not a rolling forest (nothing was ever asked of ideation)."""
    admitted: list[str] = []
    rejected: Counter[str] = Counter()
    published: set[str] = set()
    ended: str | None = None
    for e in journal.log.read(IdeaAdmitted, IdeaRejected, IdeaPublished, IdeationEnded):
        if isinstance(e, IdeaAdmitted):
            admitted.append(e.idea)
        elif isinstance(e, IdeaRejected):
            rejected[e.verdict] += 1
        elif isinstance(e, IdeaPublished):
            published.add(e.idea)
        elif isinstance(e, IdeationEnded):
            ended = e.reason
    if not admitted and not rejected and ended is None:
        return None
    retired = [i for i in admitted if i in journal.idea_stopped and i not in published]
    return IdeaStates(
        admitted=admitted,
        running=[i for i in admitted if i not in published and i not in retired],
        retired=retired,
        published=[i for i in admitted if i in published],
        rejected=dict(sorted(rejected.items())),
        ended=ended,
    )


def ideation_counts(journal: Journal) -> dict[str, Any] | None:
    """`idea_states` as counts (benchmarks' results)."""
    s = idea_states(journal)
    if s is None:
        return None
    counts = {k: len(getattr(s, k)) for k in ("admitted", "running", "retired", "published")}
    return {**counts, "rejected": s.rejected, "ended": s.ended}


def ideation_line(journal: Journal) -> str | None:
    s = idea_states(journal)
    if s is None:
        return None
    rejected = ", ".join(f"{v} {k}" for k, v in s.rejected.items()) or "none"
    more = f" and {len(s.retired) - 5} more" if len(s.retired) > 5 else ""
    retired = f" ({', '.join(s.retired[:5])}{more})" if s.retired else ""
    return (
        f"ideas (rolling forest): {len(s.admitted)} admitted: {len(s.running)} running or waiting, "
        f"{len(s.retired)} retired{retired}, {len(s.published)} published; rejected: {rejected}; "
        + (f"ideation ended: {s.ended}" if s.ended else "ideation goes on")
    )
