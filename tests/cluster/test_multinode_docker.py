"""A real multi-node Ray cluster in Docker containers: a head and workers on a private network.

One scenario, in order, to keep the cluster start-up cost to one: a run spread over two workers,
a third worker added mid-run (the slots follow it), one worker killed mid-run, the driver killed
with SIGKILL and the run resumed on the head. Asserted from the journal (the `worker` of every
result is the container's hostname). Sandboxes inside the workers are the local (bubblewrap) provider.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.dockercluster import DockerRayCluster, docker_available
from tests.cluster.support import wait_for
from tests.helpers import make_config, make_template

pytestmark = [pytest.mark.docker, pytest.mark.e2e]
UNAVAILABLE = docker_available()


def events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip().endswith("}")]


def finished_on(evs: list[dict[str, Any]]) -> Counter[str]:
    return Counter(e["result"]["worker"].split(":")[0] for e in evs if e["type"] == "attempt_finished")


def in_flight_on(run_dir: Path, evs: list[dict[str, Any]], host: str) -> bool:
    done = {(e["node_id"], e["attempt"]) for e in evs if e["type"] in ("attempt_finished", "attempt_lost")}
    for e in evs:
        if e["type"] == "attempt_started" and (e["node_id"], e["attempt"]) not in done:
            marker = run_dir / "nodes" / e["node_id"] / f"attempt-{e['attempt']}.worker.json"
            if marker.exists() and json.loads(marker.read_text())["host"] == host:
                return True
    return False


@pytest.mark.skipif(UNAVAILABLE is not None, reason=f"multi-node test needs Docker: {UNAVAILABLE}")
@pytest.mark.timeout(900)
def test_run_spreads_over_workers_survives_a_lost_worker_and_a_killed_driver(tmp_path: Path) -> None:
    from cluster.image import ensure_node_image

    image = ensure_node_image()
    shared = tmp_path / "shared"
    tpl = make_template(shared / "tpl", fixed={"sleep": 4.0})  # long enough to outlast a worker's start
    cfg = make_config(
        shared,
        tpl,
        executor={"kind": "ray", "address": "auto", "max_in_flight": None},
        sandbox="local",  # slots follow the cluster
        stages={
            "preliminary": {"max_nodes": 10},
            "hyperparameter": {"max_nodes": 16},
            "agenda": {"max_nodes": 6},
            "ablation": {"max_nodes": 2},
        },
        output_dir=str(shared / "runs"),
    )
    cluster = DockerRayCluster(image, shared)
    try:
        cluster.start_head()
        cluster.start_worker("w1")
        cluster.start_worker("w2")
        wait_for(
            lambda: all(map(cluster.ray_started, ("head", "w1", "w2"))),
            timeout=240,
            poll=1,
            what="head and two workers",
        )
        pid_file = shared / "driver.pid"
        launched = cluster.exec(
            "head",
            f"echo $$ > {pid_file}; cd {shared}; exec silva run {shlex.quote(str(cfg))} "
            f"> {shared}/driver.log 2>&1",
            detach=True,
        )
        assert launched.returncode == 0, launched.stderr
        runs = shared / "runs"
        wait_for(lambda: runs.exists() and any(runs.iterdir()), timeout=120, what="the run directory")
        run_dir = next(runs.iterdir())

        # 1. Spread: results from both workers.
        wait_for(
            lambda: {"w1", "w2"} <= set(finished_on(events(run_dir))),
            timeout=240,
            poll=0.5,
            what="results from both workers",
        )
        # 2. A worker added mid-run: the slots follow (two workers of 2 CPUs, then three).
        cluster.start_worker("w3")
        wait_for(
            lambda: any(e["type"] == "slots_changed" and e["slots"] == 6 for e in events(run_dir)),
            timeout=240,
            poll=0.5,
            what="the slots to follow the third worker",
        )
        # 3. A worker killed while one of its attempts runs; the added worker picks up work.
        wait_for(
            lambda: in_flight_on(run_dir, events(run_dir), "w1"),
            timeout=120,
            poll=0.2,
            what="an attempt in flight on w1",
        )
        cluster.kill("w1")
        wait_for(
            lambda: finished_on(events(run_dir))["w3"] > 0, timeout=300, poll=0.5, what="a result from w3"
        )
        wait_for(
            lambda: any(e["type"] == "attempt_lost" for e in events(run_dir)),
            timeout=120,
            poll=0.5,
            what="the lost attempt on w1 to be journaled",
        )
        before = events(run_dir)
        assert not any(e["type"] in ("run_finished", "run_stopped") for e in before), (
            "run ended before the driver kill"
        )
        # 4. The driver killed with SIGKILL, then resumed on the head.
        cluster.exec("head", f"kill -KILL $(cat {pid_file})")
        done_before = {e["node_id"]: e for e in events(run_dir) if e["type"] == "attempt_finished"}
        resumed = cluster.exec("head", f"cd {shared}; silva resume {run_dir}", timeout=600)
        assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    finally:
        log = (shared / "driver.log").read_text() if (shared / "driver.log").exists() else ""
        cluster.remove()

    after = events(run_dir)
    assert after[-1]["type"] == "run_finished", (after[-1], log[-2000:])
    finished = [e for e in after if e["type"] == "attempt_finished"]
    per_node = Counter(e["node_id"] for e in finished)
    # Speculative work discarded before it finished (search.speculate, on by default) has none.
    discarded = {e["node_id"] for e in after if e["type"] == "node_discarded"}
    created = {e["node"]["id"] for e in after if e["type"] == "node_created"}
    assert created - discarded <= set(per_node) <= created and set(per_node.values()) == {
        1
    }  # exactly one result per node
    for node_id, event in done_before.items():  # completed before the kill: kept, never re-run
        assert next(e for e in finished if e["node_id"] == node_id) == event
    lost = [e for e in after if e["type"] == "attempt_lost"]
    assert lost and all(
        e["node_id"] in per_node or e["node_id"] in discarded for e in lost
    )  # retried to a result
    for e in (e for e in lost if e["node_id"] in per_node):
        retry = next(f for f in finished if f["node_id"] == e["node_id"])
        assert retry["attempt"] > e["attempt"] and not retry["result"]["worker"].startswith("w1:")
    hosts = finished_on(after)
    assert hosts["w1"] > 0 and hosts["w2"] > 0 and hosts["w3"] > 0 and hosts["head"] == 0, hosts
    first_session = [e["slots"] for e in before if e["type"] == "slots_changed"]
    assert first_session[:2] == [4, 6], first_session  # slots followed the cluster
    joined = [e for e in after if e["type"] == "cluster_joined"]
    assert len(joined) == 2 and all(e["kind"] == "joined" for e in joined)  # first run and resume
