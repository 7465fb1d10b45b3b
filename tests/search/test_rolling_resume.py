"""A rolling forest whose driver is killed (SIGKILL) after admitting ideas resumes from its journal:
no idea admitted twice, no finished node run again, no idea paid for twice, the same ideas plus
only the admissions still needed, and status counts that add up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine import events as ev
from engine.journal import Journal
from engine.llm.ledger import LEDGER_FILE, read_records
from silva import lifecycle as run
from silva.rolling import ideation_counts
from silva.status_json import status_report
from tests.ideation.fake_literature import fake_literature
from tests.search.agentic_helpers import providers
from tests.search.test_rolling import Scientist, rolling_config

ROOT = Path(__file__).resolve().parents[2]


class Counting(Scientist):
    """The scripted models of the resumed run, counting the ideation calls they answer."""

    def __init__(self) -> None:
        super().__init__()
        self.ideation_calls = 0

    def __call__(self, call: Any) -> str:
        self.ideation_calls += call.role == "ideation"
        return super().__call__(call)


def killed_run(tmp: Path, url: str, kill_at: str) -> Path:
    """`silva run` of a rolling forest in a child process that SIGKILLs itself when asked for the
    idea `kill_at`; the run directory it leaves."""
    rolling_config(tmp, url, max_ideas=2)
    config = tmp / "run.yaml"
    spec = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**spec, "scripted_fn": "tests.search.rolling_models:respond"}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SILVA_TEST_KILL_AT_IDEA": kill_at}
    child = subprocess.run(
        [sys.executable, "-m", "silva.cli.main", "run", str(config)],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == -signal.SIGKILL, child.stdout[-2000:] + child.stderr[-2000:]
    (run_dir,) = (tmp / "runs").iterdir()
    return run_dir


def ideation_records(run_dir: Path) -> int:
    return sum(1 for r in read_records(run_dir / LEDGER_FILE) if r.role == "ideation")


# The scripted ideation model's ideas in the order it makes them (tests/ideation/scripted_ideas.py).
MADE = ["smooth_asym", "rff_speed", "smooth_asym_again", "loss_curriculum"]
REJECTED = {"rff_speed": "not_novel", "smooth_asym_again": "duplicate"}


@pytest.mark.e2e
@pytest.mark.parametrize("kill_at", ["rff_speed", "loss_curriculum"])
def test_a_rolling_forest_killed_after_admissions_resumes_without_repeating_anything(
    tmp_path: Path, kill_at: str
) -> None:
    """Killed while ideation makes the second idea (the first one made, maybe not yet admitted:
    then it is offered again from the archive) or the fourth (the first admitted and grown, two
    rejected)."""
    with fake_literature() as (url, _):
        run_dir = killed_run(tmp_path, url, kill_at)
        before = Journal.open(run_dir, read_only=True)
        admitted = [e.idea for e in before.log.read(ev.IdeaAdmitted)]
        rejected = {e.idea: e.verdict for e in before.log.read(ev.IdeaRejected)}
        made = MADE[: MADE.index(kill_at)]
        assert admitted == ["smooth_asym"] or (kill_at == "rff_speed" and admitted == [])
        # Ideation runs beside the driver: the verdict on the idea made just before the kill may
        # not be journaled yet (that idea is offered again from the archive on resume).
        judged = {i: v for i, v in REJECTED.items() if i in made}
        assert rejected in (judged, {i: v for i, v in judged.items() if i != made[-1]})
        done = {n.id: n.attempts for n in before if n.is_finished}
        assert done or kill_at == "rff_speed"
        kept = before.log.count  # events journaled before the kill
        paid = ideation_records(run_dir)
        assert paid > 0
        # What status says of the killed run: no clean stop, its admitted ideas still running.
        killed = status_report(run_dir, before)
        assert killed.state == "running" and killed.nodes["total"] == len(list(before))
        states = killed.ideas  # None when ideation had decided nothing yet
        # The first idea may have ended (its paper written) while ideation made the next ones.
        assert (states.admitted if states else []) == admitted
        assert (sorted(states.running + states.published) if states else []) == admitted
        assert (states.rejected if states else {}) == dict(sorted(Counter(rejected.values()).items()))
        cfg, journal = run.open_run(run_dir)
        again = Counting()
        outcome = run.execute(cfg, journal, providers=providers(again))
    assert outcome.status == "finished", outcome.message
    j = Journal.open(run_dir, read_only=True)
    admitted = [e.idea for e in j.log.read(ev.IdeaAdmitted)]
    assert admitted == ["smooth_asym", "loss_curriculum"]  # once each; only the one still needed
    assert {e.idea: e.verdict for e in j.log.read(ev.IdeaRejected)} == REJECTED
    # Ideation was asked only for the ideas not made before the kill; the ledger keeps what the
    # killed driver paid, and the resumed one paid only for the new ideas' calls.
    assert again.generated == MADE[MADE.index(kill_at) :]
    assert ideation_records(run_dir) == paid + again.ideation_calls
    # A node finished before the kill is never run again.
    assert {i: j.nodes[i].attempts for i in done} == done
    assert not [e.node_id for e in j.log.read(ev.AttemptStarted, start=kept) if e.node_id in done]
    assert {e.idea for e in j.log.read(ev.IdeaPublished)} == set(admitted)
    counts = ideation_counts(j)
    assert counts is not None
    assert (counts["admitted"], counts["running"], counts["retired"], counts["published"]) == (2, 0, 0, 2)
    report = status_report(run_dir, j)
    assert report.state == "finished" and report.nodes["total"] == sum(
        v for k, v in report.nodes.items() if k != "total"
    )
    assert {n.idea for n in j} == set(admitted)
