"""A rolling forest (`ideation:`): ideas asked for as the slots need them, checked for novelty,
admitted, grown and finished while the rest runs; journaled, and resumed after a stop."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Collection
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from engine import events as ev
from engine.executor import Job
from engine.journal import Journal
from engine.node import MetricSpec, Node
from search.agentic.plan import PLAN
from search.allocation import Allocation, IdeaInfo
from search.config import AllocationConfig, IdeaBudgets, IdeaSource
from search.idea import Idea
from search.rolling import Offer, RollingForest, RollingSettings
from silva import lifecycle as run
from silva.config import RunConfig, load_config
from silva.rolling import ideation_line
from silva.status import print_status
from silva.view.data import _run_facts
from tests.helpers import load_file, write_config
from tests.ideation.fake_literature import fake_literature
from tests.search.agentic_helpers import LLM, providers, responder

IDEAS = load_file(Path(__file__).parents[1] / "ideation" / "scripted_ideas.py", "scripted_ideas_rolling")
TINY = {s: {"max_nodes": 1} for s in ("preliminary", "hyperparameter", "agenda", "ablation")}


def rolling_config(tmp: Path, url: str, **ideation: Any) -> RunConfig:
    section = {
        "topic": "Cheap defences of linear classifiers against label noise.",
        "metrics": [{"name": "val_accuracy", "direction": "maximize", "primary": True}],
        "reflections": 1,
        "novelty_rounds": 1,
        "max_rejected": 3,
        "literature": {"base_url": url, "requests_per_s": 100, "max_retries": 0},
        **ideation,
    }
    llm = {**LLM, "roles": {**LLM["roles"], "ideation": {"model": "sci", "max_tokens": 4096}}}
    cfg = {
        "name": "rolling",
        "output_dir": str(tmp / "runs"),
        "replicates": 1,
        "stages": TINY,
        "search": {"num_drafts": 1},
        "budgets": {"wall_clock_s": 300, "node_timeout_s": 30},
        "executor": {"kind": "inprocess", "max_in_flight": 2},
        "sandbox": "none",
        "llm": llm,
        "ideation": section,
    }
    return load_config(write_config(tmp, cfg, {}))


class Scientist:
    """The scripted scientist for experiments, the scripted ideation model for ideas; counts
    the ideas it was asked to generate and can stop the driver at the n-th one (SIGINT)."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.science = responder(plots=False)
        self.generated: list[str] = []
        self.stop_at = stop_at

    def __call__(self, call: Any) -> str:
        if call.role != "ideation":
            return str(self.science(call))
        answer = str(IDEAS.respond(call))
        if call.context["step"] == "generate":
            self.generated.append(json.loads(answer)["name"])
            if len(self.generated) == self.stop_at:
                os.kill(os.getpid(), signal.SIGINT)  # the driver stops as on Ctrl-C
        return answer


def events(j: Journal, *types: type[ev.Event]) -> list[Any]:
    return list(j.log.read(*types))


@pytest.mark.e2e
def test_a_rolling_forest_admits_novel_ideas_and_publishes_each_as_it_ends(tmp_path: Path) -> None:
    with fake_literature() as (url, _):
        cfg = rolling_config(tmp_path, url)
        run_dir, journal = run.create_run(cfg)
        outcome = run.execute(cfg, journal, providers=providers(Scientist()))
    j = Journal.open(run_dir)
    admitted = [e.idea for e in events(j, ev.IdeaAdmitted)]
    rejected = {e.idea: e.verdict for e in events(j, ev.IdeaRejected)}
    assert admitted == ["smooth_asym", "loss_curriculum"]
    assert rejected["rff_speed"] == "not_novel" and rejected["smooth_asym_again"] == "duplicate"
    assert outcome.status == "finished", outcome.message
    assert "2 idea(s): 2 published" in outcome.message
    (ended,) = events(j, ev.IdeationEnded)
    assert "duplicates, not novel or invalid" in ended.reason
    assert {e.idea for e in events(j, ev.IdeaPublished)} == set(admitted)
    assert all(any(n.idea == name for n in j) for name in admitted)
    assert (run_dir / "ideas" / "ideas.jsonl").is_file()
    # `silva status` and the view say where the ideas stand.
    line = ideation_line(j)
    assert line is not None and line.startswith(
        "ideas (rolling forest): 2 admitted: 0 running or waiting, 0 retired, 2 published; rejected: "
    )
    assert "rejected: 4 duplicate, 1 not_novel;" in line and "ideation ended: the last 3" in line
    out = StringIO()
    print_status(run_dir, cfg, j, Console(file=out, width=400))
    assert line in out.getvalue()
    assert _run_facts(run_dir, cfg, j, {})["ideation"] == line


@pytest.mark.e2e
def test_a_stopped_rolling_forest_resumes_without_asking_for_its_ideas_again(tmp_path: Path) -> None:
    with fake_literature() as (url, _):
        cfg = rolling_config(tmp_path, url, max_ideas=2)
        run_dir, journal = run.create_run(cfg)
        first = Scientist(stop_at=2)
        outcome = run.execute(cfg, journal, providers=providers(first))
        assert outcome.status == "interrupted"
        j = Journal.open(run_dir)
        assert [e.idea for e in events(j, ev.IdeaAdmitted)] == ["smooth_asym"]
        cfg, journal = run.open_run(run_dir)
        again = Scientist()
        outcome = run.execute(cfg, journal, providers=providers(again))
    j = Journal.open(run_dir)
    assert outcome.status == "finished", outcome.message
    assert [e.idea for e in events(j, ev.IdeaAdmitted)] == ["smooth_asym", "loss_curriculum"]
    assert "smooth_asym" not in again.generated  # admitted before the stop: never asked for again
    assert "max_ideas" in events(j, ev.IdeationEnded)[0].reason
    assert {e.idea for e in events(j, ev.IdeaPublished)} == {"smooth_asym", "loss_curriculum"}


# -- the forest's admission rule, on trees and a supply played by hand -------------------------
class Capped:
    """A tree that proposes at most `cap` nodes in all; they stay in flight."""

    def __init__(self, name: str, cap: int) -> None:
        self.name, self.cap, self.n = name, cap, 0

    def inflight(self) -> int:
        return self.n

    def stopped(self) -> bool:
        return False

    def finished(self) -> None:
        return None

    def propose(self, slots: int) -> list[Node]:
        k = max(0, min(slots, self.cap - self.n))
        self.n += k
        return [Node(stage="preliminary", kind="draft", idea=self.name) for _ in range(k)]

    def job_for(self, node: Node, attempt: int) -> Job:
        raise AssertionError("not dispatched here")


class Supply:
    """Offers what the test queued, one batch per `ask`, delivered at the next `take`."""

    def __init__(self, offers: list[Offer], **settings: Any) -> None:
        self.settings = RollingSettings(**settings)
        self.queue, self.delivered = offers, list[Offer]()
        self.asked: list[tuple[int, list[str]]] = []

    def ask(self, n: int, known: Collection[Idea]) -> None:
        self.asked.append((n, [i.name for i in known]))
        self.delivered += [self.queue.pop(0) for _ in range(min(n, len(self.queue)))]

    def busy(self) -> bool:
        return False

    def take(self, wait: bool) -> list[Offer]:
        out, self.delivered = self.delivered, []
        return out


def idea(name: str) -> Idea:
    return Idea(name=name, title=name, hypothesis="h", metrics=[MetricSpec(name="m", primary=True)])


def rolling(journal: Journal, supply: Supply, first: Capped) -> RollingForest:
    allocation = Allocation(AllocationConfig(), journal, PLAN, [IdeaInfo(first.name, None, IdeaBudgets())])
    grown: dict[str, Capped] = {}

    def grow(i: Idea, source: IdeaSource) -> Capped:
        grown[i.name] = Capped(i.name, source.max_nodes or 100)
        return grown[i.name]

    return RollingForest([first], [idea(first.name)], 4, allocation, supply, grow)


def test_the_next_idea_is_made_ahead_and_joins_when_the_trees_cannot_fill_the_slots(tmp_path: Path) -> None:
    j = Journal.open(tmp_path / "run")
    offers = [Offer(idea("b"), True, "novel"), Offer(idea("c"), True, "novel")]
    supply = Supply(offers, per_idea={"max_nodes": 3})
    forest = rolling(j, supply, Capped("a", cap=5))
    # "a" fills every slot; ideation is asked meanwhile, not once the slots idle.
    assert len(forest.propose(4)) == 4 and supply.asked == [(1, ["a"])]
    out = forest.propose(4)  # "a" has one node left: "b", made meanwhile, waits in reserve
    assert [n.idea for n in out] == ["a"] and list(j.log.read(ev.IdeaAdmitted)) == []
    assert len(supply.asked) == 1  # one idea ahead, not more
    out = forest.propose(4)  # the trees ran short: "b" joins under its own node budget
    assert [n.idea for n in out] == ["b"] * 3
    (admitted,) = j.log.read(ev.IdeaAdmitted)
    assert admitted.idea == "b" and admitted.budgets == {"max_nodes": 3}
    assert supply.asked[1] == (1, ["a", "b"])  # and the next one is being made


def test_rejected_ideas_are_journaled_and_end_ideation_in_a_row_then_a_resume_keeps_the_forest(
    tmp_path: Path,
) -> None:
    j = Journal.open(tmp_path / "run")
    offers = [
        Offer(idea("b"), True, "novel"),
        Offer(idea("b2"), False, "duplicate", "similarity 0.93 to b"),
        Offer(idea("c"), False, "not_novel", "a found paper tests it"),
    ]
    supply = Supply(offers, max_rejected=2, per_idea={"max_nodes": 2})
    forest = rolling(j, supply, Capped("a", cap=0))
    assert [n.idea for n in forest.propose(4)] == ["b", "b"]  # nothing ran: it waited on ideation
    assert forest.propose(4) == []
    verdicts = {e.idea: e.verdict for e in j.log.read(ev.IdeaRejected)}
    assert verdicts == {"b2": "duplicate", "c": "not_novel"}
    (ended,) = j.log.read(ev.IdeationEnded)
    assert ended.reason == "the last 2 ideas were duplicates, not novel or invalid"
    asked = len(supply.asked)
    forest.propose(4)
    assert len(supply.asked) == asked  # ended: never asked again
    # A new driver over the same journal rebuilds the admitted tree and asks nothing.
    again = Supply([Offer(idea("d"), True, "novel")], max_rejected=2, per_idea={"max_nodes": 2})
    resumed = rolling(Journal.open(tmp_path / "run"), again, Capped("a", cap=0))
    assert list(resumed.by_name) == ["a", "b"] and resumed.ended == ended.reason
    resumed.propose(4)
    assert again.asked == []
