"""A live run against a real MLflow tracking server on 127.0.0.1: the server hangs (SIGSTOP) while
the run goes on, answers again, the run is SIGKILLed in the middle of sending and resumed, and
everything arrives exactly once, read back through MlflowClient."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.journal import Journal
from silva.tracking.cursor import TRACKING_DIR
from silva.tracking.follower import flat
from tests.helpers import make_config, make_template
from tests.tracking.test_tracking import check_once

mlflow = pytest.importorskip("mlflow")
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
WARNING = "did not take a record"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, ok: Callable[[], bool], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@dataclass
class Tracked:
    url: str
    run_dir: Path
    stderr: str
    killed: bool  # the SIGKILL came before the run's end


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """End a process this test started and its group (the server's workers): nothing of theirs is kept."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def silva(*args: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MLFLOW_HTTP_REQUEST_TIMEOUT": "3", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "silva.cli.main", *args],
            stdout=out,
            stderr=out,
            env=env,
            start_new_session=True,
        )


def events(run_dir: Path, kind: str) -> int:
    path = run_dir / "events.jsonl"
    return path.read_text().count(f'"type": "{kind}"') if path.is_file() else 0


def nodes_sent(run_dir: Path) -> int:
    for path in (run_dir / TRACKING_DIR).glob("mlflow-*.json"):
        try:
            return sum(k.startswith("node:") for k in json.loads(path.read_text())["runs"])
        except ValueError:  # between its write and its rename: read it again
            return 0
    return 0


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tracked]:
    tmp = tmp_path_factory.mktemp("tracking")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ]
        + [
            "--backend-store-uri",
            f"sqlite:///{tmp / 'mlflow.db'}",
            "--artifacts-destination",
            str(tmp / "art"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # MLflow's job runner (seven huey consumers, each importing mlflow) serves none of this
        # test's requests: without it the server's start takes half the CPU (7.9 s, not 14.5 s).
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        start_new_session=True,
    )
    log = tmp / "silva.out"
    started: list[subprocess.Popen[bytes]] = []
    try:
        wait_for("the MLflow server", lambda: healthy(url))
        os.killpg(server.pid, signal.SIGSTOP)  # a tracker that takes requests and never answers
        template = make_template(tmp / "tpl", fixed={"sleep": 0.7})
        cfg = make_config(
            tmp,
            template,
            executor={"kind": "inprocess", "max_in_flight": 2},
            tracking={"uri": url, "experiment": "e2e", "retry_max_s": 1, "drain_s": 120},
        )
        run = silva("run", str(cfg), log=log)
        started.append(run)
        run_dir = tmp / "runs"
        wait_for("the run directory", lambda: any(run_dir.glob("t-*/events.jsonl")))
        run_dir = next(run_dir.glob("t-*"))
        # The driver is paused (SIGSTOP) between the steps below, so that the run is still in the
        # middle when the kill comes, however slow this machine is.
        wait_for("a first node", lambda: events(run_dir, "attempt_finished") >= 1)
        os.kill(run.pid, signal.SIGSTOP)
        wait_for("the tracker warning", lambda: WARNING in log.read_text())
        done = events(run_dir, "attempt_finished")
        os.kill(run.pid, signal.SIGCONT)
        wait_for(
            "nodes finished while the tracker hangs", lambda: events(run_dir, "attempt_finished") >= done + 2
        )
        os.kill(run.pid, signal.SIGSTOP)
        assert nodes_sent(run_dir) == 0
        os.killpg(server.pid, signal.SIGCONT)
        wait_for("the backlog to be sent", lambda: nodes_sent(run_dir) >= 3)
        killed = events(run_dir, "run_finished") == 0
        os.killpg(run.pid, signal.SIGKILL)  # the driver and its follower, wherever they are
        run.wait()
        resumed = silva("resume", str(run_dir), log=log)
        started.append(resumed)
        assert resumed.wait(timeout=400) == 0, log.read_text()[-3000:]
        assert nodes_sent(run_dir) == len(Journal.open(run_dir, read_only=True).nodes)
        yield Tracked(url, run_dir, log.read_text(), killed)
    finally:
        for proc in started:
            stop_group(proc)
        stop_group(server)


def test_a_hanging_tracker_is_a_warning_and_the_run_goes_on(tracked: Tracked) -> None:
    assert tracked.stderr.count(WARNING) >= 1
    assert "answers again: sending" in tracked.stderr
    assert "View run" not in tracked.stderr and "INFO" not in tracked.stderr  # MLflow's own chatter
    assert Journal.open(tracked.run_dir, read_only=True).finished is not None


def test_every_node_metric_tag_and_file_arrives_once_after_a_sigkill(tracked: Tracked) -> None:
    assert tracked.killed
    runs = check_once(tracked.url, "e2e", tracked.run_dir)
    client = mlflow.MlflowClient(tracking_uri=tracked.url)
    journal = Journal.open(tracked.run_dir, read_only=True)
    by_node = {r.data.tags["silva.node_id"]: r for r in runs if r.data.tags["silva.level"] == "node"}
    for node in journal:
        run = by_node[node.id]
        seed = {"seed": str(node.seed)} if node.seed is not None else {}
        assert run.info.status == "FINISHED" and run.data.params == flat(node.params) | seed
        files = {f.path for f in client.list_artifacts(run.info.run_id, "files")}
        wanted = {f"files/{Path(a).name}" for a in node.artifacts}
        if node.kind != "aggregation":
            wanted.add("files/results.json")
        assert files == wanted, node.id
    idea = next(r for r in runs if r.data.tags["silva.level"] == "idea")
    best = {f"silva.best.{s}": e.node_id or "none" for (_, s), e in journal.stage_best.items()}
    assert {k: v for k, v in idea.data.tags.items() if k.startswith("silva.best.")} == best
    parent = next(r for r in runs if r.data.tags["silva.level"] == "run")
    assert parent.data.metrics["slots"] == 2 and parent.data.metrics["nodes.finished"] == len(journal.nodes)
    assert parent.data.metrics["budget.wall_clock_s"] == 300
