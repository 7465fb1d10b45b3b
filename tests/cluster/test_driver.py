"""The driver on a real local Ray: which cluster `address` picks, signals that stop a run cleanly, and
a run submitted to a live head through its Jobs API (`silva cluster submit`, `status`, `logs`, `sync`).

The tests that need the `ray start` head live in this one module: pytest-xdist's loadscope keeps a
module on one worker, so the head (module-scoped) is started once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cluster.jobs import RUN_DIR_LINE
from engine import events as ev
from engine.journal import EVENTS_FILE, Journal
from tests.cluster.support import RayHead, driver_env, stop_group
from tests.helpers import make_config, make_template


def start_driver(tmp: Path, *, ignore_sigint: bool) -> tuple[subprocess.Popen[str], Path]:
    """`silva run` on a private local Ray, as a scheduler or a background shell job starts it."""
    tpl = make_template(tmp / "tpl", fixed={"sleep": 2})
    cfg = make_config(
        tmp,
        tpl,
        executor={"kind": "ray", "num_cpus": 2, "max_in_flight": 2},
        stages={"preliminary": {"max_nodes": 40}},
        sandbox="none",
    )

    def background_job() -> None:
        # A non-interactive shell starts `cmd &` with SIGINT ignored; exec keeps that disposition.
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(
        [sys.executable, "-m", "silva.cli.main", "run", str(cfg)],
        env=driver_env(),
        cwd=tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=background_job if ignore_sigint else None,
    )
    return proc, tmp / "runs"


def journal_path(runs: Path) -> Path | None:
    found = list(runs.glob("*/" + EVENTS_FILE)) if runs.exists() else []
    return found[0] if found else None


def running(runs: Path) -> bool:
    path = journal_path(runs)
    return path is not None and '"attempt_finished"' in path.read_text()


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_sigterm_and_kill_sigint_stop_the_run_cleanly(tmp_path: Path) -> None:
    # Two drivers at once (each with its own private Ray) keep the test's wall time to one start-up.
    # First in the module: the head the later tests share is not started yet, so it takes no CPU.
    drivers = {
        "SIGTERM": start_driver(tmp_path / "term", ignore_sigint=False),
        "SIGINT": start_driver(tmp_path / "int", ignore_sigint=True),
    }
    try:
        # Each is signalled at its first result, whichever starts first: a short run that started
        # while the test waited on the other could end before its signal.
        waiting, deadline = dict(drivers), time.monotonic() + 300
        while waiting:
            for name, (proc, runs) in list(waiting.items()):
                if running(runs) or proc.poll() is not None:
                    assert proc.poll() is None, proc.communicate()[1][-3000:]
                    proc.send_signal(getattr(signal, name))
                    del waiting[name]
            assert time.monotonic() < deadline, f"timed out waiting for the first result of {sorted(waiting)}"
            time.sleep(0.05)
        results = {name: (proc.wait(timeout=120), *proc.communicate()) for name, (proc, _) in drivers.items()}
    finally:
        for proc, _ in drivers.values():
            stop_group(proc)
    for name, (code, stdout, stderr) in results.items():
        runs = drivers[name][1]
        run_dir = next(runs.iterdir())
        assert code == {"SIGTERM": 143, "SIGINT": 130}[name], (name, code, stderr[-3000:])
        assert f"continue with: silva resume {run_dir}" in stdout
        found = RUN_DIR_LINE.search(stdout)  # what `silva cluster status` reads from a job's log
        assert found is not None and found.group(1) == str(run_dir)
        assert "started a private local Ray cluster" in stdout
        assert "Traceback" not in stderr and "Stack trace" not in stderr and "*** " not in stderr, stderr[
            -3000:
        ]
        assert "Token authentication" not in stderr  # Ray's start-up noise stays out of the terminal
        journal = Journal.open(run_dir, read_only=True)
        assert journal.stop is not None and journal.stop.signal == name
        joined = [e for e in journal.log.read(ev.ClusterJoined)]
        assert len(joined) == 1 and joined[0].kind == "private" and joined[0].nodes == 1
        # Nothing left running: every node either has its result or was cancelled, to re-run on resume.
        cancelled = {e.node_id for e in journal.log.read(ev.AttemptCancelled)}
        assert all(n.is_finished or n.id in cancelled for n in journal)


CONNECT = """
import json, sys
import ray
from actors.ray_executor import connect
from engine.config import ExecutorConfig
if sys.argv[1] == "ray":  # Ray's own resolution, what Silva did before
    ray.init(log_to_driver=False)
    print(json.dumps({"address": ray.get_runtime_context().gcs_address}))
else:
    address = None if sys.argv[1] == "null" else sys.argv[1]
    print(connect(ExecutorConfig(address=address, num_cpus=1)).model_dump_json())
"""


def connect_in_subprocess(env: dict[str, str], address: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CONNECT, address], env=env, capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_address_null_starts_a_private_cluster_even_with_a_ray_start_cluster_present(
    ray_head: RayHead,
) -> None:
    env, started = ray_head.env, ray_head.gcs
    # The three drivers at once: each waits mostly on Ray's start-up or join, not on the CPU.
    with ThreadPoolExecutor(3) as pool:
        plain, private, joined = pool.map(lambda a: connect_in_subprocess(env, a), ["ray", "null", "auto"])
    # The trap: plain ray.init() joins the `ray start` cluster (Ray's documented order).
    assert plain["address"] == started
    assert private["kind"] == "private" and private["address"] != started and private["nodes"] == 1
    assert joined["kind"] == "joined" and joined["address"] == started


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
