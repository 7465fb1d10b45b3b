"""The engine on a real (session-scoped, local) Ray cluster: the example, lost workers, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine import events as ev
from engine.journal import EVENTS_FILE, Journal
from engine.node import NodeStatus
from search.template.plan import PLAN
from silva import lifecycle as run
from silva.config import load_config
from tests.helpers import make_config, make_template

STAGES = PLAN.names

pytestmark = pytest.mark.usefixtures("ray_cluster")
ROOT = Path(__file__).resolve().parents[2]


def wait_for(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_example_runs_end_to_end_offline(tmp_path: Path) -> None:
    cfg = load_config(ROOT / "examples" / "digits_rff" / "run.yaml")
    cfg = cfg.model_copy(update={"output_dir": tmp_path})
    run_dir, journal = run.create_run(cfg)
    outcome = run.execute(cfg, journal)
    assert outcome.status == "finished", outcome.message
    j = Journal.open(run_dir)
    assert all(("default", s) in j.stage_ended for s in STAGES)
    assert not j.buggy_nodes, [(n.id, n.reason) for n in j.buggy_nodes]
    best = j.nodes[j.stage_ended[("default", "agenda")].best_node_id or ""]
    assert best.params["use_rff"] is True and 0.5 < best.metric("val_accuracy") <= 1.0  # type: ignore[operator]
    for stage in STAGES:
        agg = j.nodes[j.stage_ended[("default", stage)].aggregate_node_id or ""]
        assert len(agg.refs) == 1 + cfg.replicates
        assert (run_dir / agg.artifacts[1]).read_bytes().startswith(b"\x89PNG")


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_killed_worker_is_retried_and_node_gets_one_result(tmp_path: Path) -> None:
    tpl = make_template(tmp_path / "tpl", fixed={"first_sleep": 60})
    cfg = load_config(make_config(tmp_path, tpl, executor={"kind": "ray"}, sandbox="local"))
    run_dir, journal = run.create_run(cfg)
    marker = run_dir / "nodes" / "n0000" / "attempt-1" / "sleeping"
    killed: list[int] = []

    def kill_first_worker() -> None:
        wait_for(marker.exists, what="the first attempt to start")
        info = json.loads((run_dir / "nodes" / "n0000" / "attempt-1.worker.json").read_text())
        os.kill(info["pid"], signal.SIGKILL)
        killed.append(info["pid"])

    killer = threading.Thread(target=kill_first_worker)
    killer.start()
    outcome = run.execute(cfg, journal)
    killer.join()
    assert killed and outcome.status == "finished", outcome.message
    j = Journal.open(run_dir)
    node = j.nodes["n0000"]
    assert (node.status, node.attempts, node.lost_attempts) == (NodeStatus.GOOD, 2, 1)
    lost = [e for e in j.log.read(ev.AttemptLost)]
    assert len(lost) == 1 and lost[0].node_id == "n0000" and "Worker" in lost[0].error
    finished = [e for e in j.log.read(ev.AttemptFinished) if e.node_id == "n0000"]
    assert len(finished) == 1 and finished[0].attempt == 2
    assert json.loads((run_dir / "nodes" / "n0000" / "attempt-2.worker.json").read_text())["pid"] != killed[0]


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_driver_sigkill_then_resume_loses_nothing(tmp_path: Path) -> None:
    import ray

    tpl = make_template(tmp_path / "tpl", fixed={"sleep": 0.4})
    # This test process's own cluster by its address: `auto` reads the newest cluster this machine
    # started, which under pytest-xdist can be another test's short-lived private one.
    address = ray.get_runtime_context().gcs_address
    path = make_config(
        tmp_path, tpl, executor={"kind": "ray", "address": address, "max_in_flight": 3}, sandbox="local"
    )
    env = {**os.environ, "RAY_AUTH_MODE": "token", "PYTHONPATH": str(ROOT)}
    log = tmp_path / "driver.log"
    with log.open("wb") as out:
        driver = subprocess.Popen(
            [sys.executable, "-m", "silva.cli.main", "run", str(path)],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    runs = tmp_path / "runs"

    def finished_count() -> int:
        if driver.poll() is not None:
            raise AssertionError(f"the driver exited ({driver.returncode}) early:\n{log.read_text()[-3000:]}")
        dirs = list(runs.glob("*/" + EVENTS_FILE)) if runs.exists() else []
        return sum('"attempt_finished"' in line for line in dirs[0].read_text().splitlines()) if dirs else 0

    try:
        wait_for(lambda: finished_count() >= 6, timeout=180, what="six finished attempts")
    except AssertionError as e:
        raise AssertionError(f"{e}; the driver printed:\n{log.read_text()[-3000:]}") from None
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    run_dir = next(runs.iterdir())
    before = Journal.open(run_dir)
    assert before.finished is None and before.stop is None  # killed, not stopped
    done_before = {n.id: n.model_dump() for n in before if n.is_finished}
    running_before = {n.id for n in before if n.status == NodeStatus.RUNNING}
    before.log.close()

    outcome = run.resume(run_dir)
    assert outcome.status == "finished", outcome.message
    after = Journal.open(run_dir)
    assert all(("default", s) in after.stage_ended for s in STAGES)
    for node_id, dumped in done_before.items():  # completed nodes kept, never re-run
        assert after.nodes[node_id].model_dump() == dumped
    kept = {n.id for n in after if n.status != NodeStatus.DISCARDED}  # not speculation made moot
    for node_id in running_before & kept:  # in-flight ones re-run once
        assert (
            after.nodes[node_id].is_finished
            and after.nodes[node_id].attempts == before.nodes[node_id].attempts + 1
        )
    per_node = [e.node_id for e in after.log.read(ev.AttemptFinished)]
    assert len(per_node) == len(set(per_node))  # no node paid for twice
    assert kept <= set(per_node) <= set(after.nodes)
    assert len(after.sessions) == 2
    # The same tree: stage bests decided before the kill are the ones it ended with.
    for key, decision in before.stage_best.items():
        assert after.stage_best[key].node_id == decision.node_id


def test_a_background_snapshot_is_written_while_ray_tasks_run_in_the_driver(tmp_path: Path) -> None:
    """The periodic snapshot forks the driver (engine/eventlog.py). A Ray driver has gRPC threads,
    which make a fork unsafe for a child that uses them: the snapshot's child never does, and
    leaves with os._exit, so snapshots forked while tasks are in flight are all written."""
    import ray

    from tests.engine.test_snapshot import grow

    @ray.remote
    def pause(x: int) -> int:
        time.sleep(0.01)
        return x

    grow(tmp_path, 50)
    j = Journal.open(tmp_path)
    for i in range(10):
        refs = [pause.remote(k) for k in range(8)]  # tasks in flight while the driver forks
        j.record(ev.StageStarted(idea="a", stage=f"s{i}", root=None))
        j.snapshot(background=True)
        assert ray.get(refs) == list(range(8))
    j.log.close()
    assert j.log._writer is None  # every child collected
    assert Journal.open(tmp_path, read_only=True).log.snapshot_count == j.log.count
