"""Machine faults are never experiment failures: an attempt that meets a full disk while its files
are staged is not judged, the run stops (exit 3) and the node runs again on resume. A signal that
lands while a finished run shuts down still exits 143 and releases the run's lock."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import engine.attempt
from engine.journal import Journal
from engine.node import NodeStatus
from silva.cli.main import main
from tests.helpers import make_config, make_template


@pytest.mark.e2e
def test_a_full_disk_while_staging_is_no_verdict_and_the_node_reruns_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = engine.attempt.fresh_workspace
    failed: list[str] = []

    def staging(run_dir: Path, node_id: str, attempt: int) -> Path:
        if node_id == "n0002" and not failed:
            failed.append(node_id)
            raise OSError(errno.ENOSPC, "No space left on device", str(run_dir / "nodes" / node_id))
        return real(run_dir, node_id, attempt)

    monkeypatch.setattr(engine.attempt, "fresh_workspace", staging)
    config = make_config(
        tmp_path, make_template(tmp_path / "tpl"), executor={"kind": "inprocess", "max_in_flight": 1}
    )
    assert main(["run", str(config)]) == 3
    assert "No space left on device" in capsys.readouterr().err
    run_dir = next((tmp_path / "runs").iterdir())
    journal = Journal.open(run_dir, read_only=True)
    assert failed and journal.nodes["n0002"].status == NodeStatus.PENDING, journal.nodes["n0002"].reason
    assert journal.stop is not None and "No space left on device" in journal.stop.reason
    journal.log.close()
    assert main(["resume", str(run_dir)]) == 0
    journal = Journal.open(run_dir, read_only=True)
    assert journal.nodes["n0002"].status == NodeStatus.GOOD
    assert not any("machine fault" in n.reason or "internal error" in n.reason for n in journal)


SIGTERM_AT_SHUTDOWN = """
import os, signal, sys
from engine.executor import InProcessExecutor
shutdown = InProcessExecutor.shutdown
def killed(self):
    os.kill(os.getpid(), signal.SIGTERM)
    shutdown(self)
InProcessExecutor.shutdown = killed
from silva.cli.main import main
sys.exit(main(["run", sys.argv[1]]))
"""


@pytest.mark.e2e
def test_a_sigterm_while_a_finished_run_shuts_down_exits_143_and_releases_the_lock(tmp_path: Path) -> None:
    config = make_config(tmp_path, make_template(tmp_path / "tpl"), stages=_small())
    done = subprocess.run(
        [sys.executable, "-c", SIGTERM_AT_SHUTDOWN, str(config)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 143, done.stdout[-2000:] + done.stderr[-2000:]
    run_dir = next((tmp_path / "runs").iterdir())
    assert not (run_dir / "events.lock").exists()
    assert "finished: all four stages complete" in done.stdout


def _small() -> dict[str, Any]:
    return {
        "preliminary": {"max_nodes": 1},
        "hyperparameter": {"max_nodes": 1},
        "agenda": {"max_nodes": 1},
        "ablation": {"max_nodes": 1},
    }
