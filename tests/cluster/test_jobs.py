"""`silva cluster submit`, `status`, `logs` and `sync` against a live Ray head and its Jobs API."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine import events as ev
from engine.journal import Journal
from tests.cluster.support import RayHead
from tests.helpers import make_config, make_template


def silva(
    head: RayHead, cwd: Path, *args: str, code: int = 0, token_mode: bool = True
) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it beside the head: a process of its own, Ray's token mode set."""
    env = {k: v for k, v in head.env.items() if token_mode or k != "RAY_AUTH_MODE"}
    out = subprocess.run(
        [sys.executable, "-m", "silva.cli.main", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == code, (args, out.stdout[-3000:], out.stderr[-3000:])
    assert "Traceback" not in out.stderr and " INFO " not in out.stderr, out.stderr[-3000:]
    return out


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_a_submitted_run_ends_on_the_head_and_is_followed_and_synced(
    ray_head: RayHead, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    cfg = make_config(project, make_template(project / "tpl"), executor={"kind": "ray", "max_in_flight": 2})
    shared = tmp_path / "shared"  # the cluster's shared storage: one machine here
    address = ("--address", ray_head.dashboard)

    submitted = silva(ray_head, project, "cluster", "submit", str(cfg), "--output-dir", str(shared), *address)
    job_id = submitted.stdout.split()[0]
    assert job_id.startswith("raysubmit_") and f"silva cluster logs {job_id} --follow" in submitted.stdout

    followed = silva(ray_head, tmp_path, "cluster", "logs", job_id, "--follow", *address).stdout
    (run_dir,) = shared.iterdir()
    assert f"run directory: {run_dir}" in followed and "finished: all four stages complete" in followed
    assert f"joined the Ray cluster at {ray_head.gcs}" in followed

    state = silva(ray_head, tmp_path, "cluster", "status", job_id, *address).stdout
    assert f"{job_id}: SUCCEEDED" in state and f"run directory: {run_dir}" in state
    listed = silva(ray_head, tmp_path, "cluster", "status", *address).stdout
    assert f"{job_id}  SUCCEEDED  silva run run.yaml" in listed
    # Without Ray's token mode the Jobs API refuses the client: one line that says what to set.
    refused = silva(ray_head, tmp_path, "cluster", "status", *address, code=3, token_mode=False).stderr
    assert refused.strip().splitlines() == [
        f"error: the Ray cluster at {ray_head.dashboard} wants its token: set RAY_AUTH_MODE=token, "
        "with the cluster's token in ~/.ray/auth_token or RAY_AUTH_TOKEN"
    ]

    journal = Journal.open(run_dir, read_only=True)
    (joined,) = journal.log.read(ev.ClusterJoined)
    assert joined.kind == "joined" and joined.address == ray_head.gcs
    assert journal.finished is not None and all(n.is_finished for n in journal) and journal.nodes

    copy = tmp_path / "copy"
    synced = silva(ray_head, tmp_path, "cluster", "sync", str(run_dir), str(copy)).stdout
    files = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*") if p.is_file())
    assert synced.startswith(f"copied {len(files)} file(s)")
    assert sorted(p.relative_to(copy) for p in copy.rglob("*") if p.is_file()) == files
    assert (copy / "events.jsonl").read_bytes() == (run_dir / "events.jsonl").read_bytes()
