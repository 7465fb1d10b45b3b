"""A search mode defined only here, registered in one place, run end to end by silva.lifecycle:
nothing in silva/ names it (docs/architecture.md, "Search modes")."""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from pydantic import Field
from rich.console import Console

from engine.config import Strict
from engine.dispatch import Finish
from engine.errors import ConfigError
from engine.executor import Job
from engine.journal import Journal
from engine.node import AttemptResult, MetricSpec, MetricValue, Node, NodeStatus
from search import modes as search_modes
from search.allocation import Allocation, IdeaInfo, Rung
from search.config import AllocationConfig, IdeaSource
from search.modes import Mode, ModeConfig, register_mode, unregister_mode
from search.plan import StagePlan, StageSpec
from silva import lifecycle
from silva.config import load_config
from silva.status import print_status

PLAN = StagePlan(
    "tally", (StageSpec("count", grows="square", ends="`tally.count` nodes"),), progress="squares_done"
)
SCORE = MetricSpec(name="square", direction="maximize", primary=True)


class TallyConfig(Strict):
    count: int = Field(ge=1, description="nodes to grow")


@dataclass
class SquareJob:
    node_id: str
    attempt: int
    value: int

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        return AttemptResult(
            status="good", metrics=[MetricValue(name=SCORE.name, value=self.value**2, direction="maximize")]
        )


class Tally:
    """Grows `count` nodes in the plan's one stage, each reporting the square of its index."""

    def __init__(self, journal: Journal, count: int) -> None:
        self.journal, self.count = journal, count

    def propose(self, slots: int) -> list[Node]:
        have = len(self.journal.nodes)
        return [
            Node(stage=PLAN.first, kind="square", params={"i": i})
            for i in range(have, min(self.count, have + slots))
        ]

    def job_for(self, node: Node, attempt: int) -> Job:
        return SquareJob(node.id, attempt, node.params["i"])

    def finished(self) -> Finish | None:
        done = sum(n.is_finished for n in self.journal.nodes.values())
        return Finish("complete", f"{done} squares") if done == self.count else None


def _section(cfg: ModeConfig) -> TallyConfig:
    section = cfg.section("tally")
    assert isinstance(section, TallyConfig)
    return section


def squares_done(journal: Journal, plan: StagePlan, idea: str, rung: Rung, spec: MetricSpec) -> float:
    """How far an idea has come: its finished nodes (the allocation compares ideas by it)."""
    return float(sum(n.is_finished for n in journal.of_idea(idea)))


TALLY = Mode(
    name="tally",
    plan=PLAN,
    source="`tally` (squares)",
    selected=lambda cfg: cfg.section("tally") is not None,
    build=lambda ctx: Tally(ctx.journal, _section(ctx.cfg).count),
    metrics=lambda cfg: [SCORE],
    section="tally",
    section_model=TallyConfig,
    needs_llm=False,
    progress_scores={"squares_done": squares_done},
    status_lines=lambda run_dir: [f"tally: squares counted in {run_dir.name}"],
)


@pytest.fixture
def tally() -> Iterator[Mode]:
    register_mode(TALLY)
    yield TALLY
    unregister_mode(TALLY.name)


def write(tmp: Path, **settings: object) -> Path:
    path = tmp / "run.yaml"
    base = {
        "name": "tally",
        "output_dir": str(tmp / "runs"),
        "sandbox": "none",
        "executor": {"kind": "inprocess", "max_in_flight": 2},
    }
    path.write_text(yaml.safe_dump({**base, **settings}))
    return path


def test_a_mode_from_the_test_directory_runs_through_the_lifecycle(tmp_path: Path, tally: Mode) -> None:
    cfg = load_config(write(tmp_path, tally={"count": 5}))
    assert cfg.mode == "tally" and cfg.plan is PLAN and list(cfg.stages) == ["count"]
    run_dir, journal = lifecycle.create_run(cfg)
    outcome = lifecycle.execute(cfg, journal)
    assert outcome.status == "finished", outcome
    nodes = sorted(journal.nodes.values(), key=lambda n: n.params["i"])
    assert [n.metrics[0].value for n in nodes] == [0, 1, 4, 9, 16]
    assert all(n.status == NodeStatus.GOOD and n.stage == "count" for n in nodes)
    assert journal.metric_specs == [SCORE]
    # The snapshot keeps the mode's section, so the run reopens as the same mode.
    again, _ = lifecycle.open_run(run_dir, read_only=True)
    assert again.mode == "tally" and again.section("tally") == TallyConfig(count=5)
    assert lifecycle.resume(run_dir).message.startswith("already finished")
    # `silva status` shows the mode's own line without naming the mode anywhere in silva/.
    out = io.StringIO()
    print_status(run_dir, again, journal, Console(file=out, width=200))
    assert f"tally: squares counted in {run_dir.name}" in out.getvalue()


def test_the_modes_section_is_validated_with_the_config(tmp_path: Path, tally: Mode) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, tally={"count": 0, "cuont": 3}))
    assert "tally.count = 0: Input should be greater than or equal to 1" in str(err.value)
    assert "tally.cuont" in str(err.value)
    with pytest.raises(ConfigError, match="more than one search mode: template by `template`"):
        load_config(write(tmp_path, tally={"count": 1}, template=str(tmp_path)))


def test_without_the_registration_its_section_is_an_unknown_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="tally"):
        load_config(write(tmp_path, tally={"count": 5}))


def test_another_package_adds_a_mode_by_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An installed distribution, as pip leaves it: its metadata names the module's Mode.
    dist = tmp_path / "silva_tally-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: silva-tally\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[silva.search_modes]\ntally = tests.search.test_mode_registry:TALLY\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(search_modes, "_MODES", {})
    monkeypatch.setattr(search_modes, "_loaded", False)  # built-ins and entry points are read again
    assert [m.name for m in search_modes.modes()] == ["template", "agentic", "discovery", "tally"]
    assert load_config(write(tmp_path, tally={"count": 2})).mode == "tally"


def test_a_modes_own_progress_score_drives_the_allocation(tmp_path: Path, tally: Mode) -> None:
    journal = Journal.open(tmp_path)
    ideas = [IdeaInfo(name, SCORE, IdeaSource(path=tmp_path / name)) for name in ("a", "b")]
    allocation = Allocation(AllocationConfig(policy="successive_halving"), journal, PLAN, ideas)
    assert allocation.progress is squares_done
