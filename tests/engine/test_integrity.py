"""Journal integrity as a user meets it: damage is named and never "fixed" silently, a torn
tail is set aside only by a writer, views never write, one writer per run, `silva repair`."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from engine.dispatch import RunOutcome
from engine.eventlog import EVENTS_FILE
from engine.journal import Journal
from engine.writerlock import LOCK_FILE
from silva.cli.main import main
from silva.cli.run import report
from tests.helpers import make_config, make_template

REPO = Path(__file__).resolve().parents[2]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("run")
    # exit 3: a budget stopped the run
    assert main(["run", str(make_config(tmp, make_template(tmp / "tpl"), budgets={"max_nodes": 4}))]) == 3
    return next((tmp / "runs").iterdir())


@pytest.fixture
def run_dir(finished_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / finished_run.name
    shutil.copytree(finished_run, copy, ignore=shutil.ignore_patterns(LOCK_FILE))
    return copy


def damage(run_dir: Path, line: int, garbage: bytes) -> list[bytes]:
    path = run_dir / EVENTS_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(line - 1, garbage)
    path.write_bytes(b"".join(lines))
    return lines


def test_garbage_mid_file_stops_every_command_and_changes_nothing(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage(run_dir, 3, b'{"seq": 2, "ts": 1.0, "typ\x00e": garbage\n')
    before = snapshot(run_dir)
    for argv in (
        ["status", str(run_dir)],
        ["export", str(run_dir), "--out", str(run_dir.parent / "x")],
        ["resume", str(run_dir)],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"{run_dir / EVENTS_FILE}: line 3 is not a valid event: not JSON" in err
        assert f"silva repair {run_dir}" in err and "Traceback" not in err
        assert snapshot(run_dir) == before  # the 100+ events after the bad line are all still there


def test_wrong_content_names_its_line(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    damage(run_dir, 4, json.dumps({"seq": 3, "ts": 1.0, "type": "node_created", "node": 5}).encode() + b"\n")
    assert main(["status", str(run_dir)]) == 2
    assert "line 4 is not a valid event: wrong content at " in capsys.readouterr().err


def test_torn_tail_ignored_by_views_and_set_aside_by_a_writer(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = run_dir / EVENTS_FILE
    good = events.read_bytes()
    events.write_bytes(good + b'{"seq": 999, "ts": 1.0, "type": "attempt_sta')
    before = snapshot(run_dir)
    assert main(["status", str(run_dir)]) == 0
    assert snapshot(run_dir) == before
    assert main(["resume", str(run_dir)]) == 3  # the budget still stops it at once
    torn = list(run_dir.glob(f"{EVENTS_FILE}.torn-*"))
    assert len(torn) == 1 and torn[0].read_bytes() == b'{"seq": 999, "ts": 1.0, "type": "attempt_sta'
    assert events.read_bytes().startswith(good)
    assert "continue with: silva resume" in capsys.readouterr().out


def test_repair_keeps_every_good_event(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = (run_dir / EVENTS_FILE).read_bytes().splitlines(keepends=True)
    node_line = next(i for i, raw in enumerate(original) if b'"node_created"' in raw)
    lost_node = json.loads(original[node_line])["node"]["id"]
    # Line 2 garbage; the node_created line gets wrong content, so its attempt lines cannot replay.
    damage(run_dir, 2, b"\xff\xfe not json\n")
    lines = (run_dir / EVENTS_FILE).read_bytes().splitlines(keepends=True)
    lines[node_line + 1] = (
        json.dumps({"seq": 0, "ts": 1.0, "type": "node_created", "node": [1]}).encode() + b"\n"
    )
    (run_dir / EVENTS_FILE).write_bytes(b"".join(lines) + b'{"torn')
    before = snapshot(run_dir)

    assert main(["repair", str(run_dir)]) == 2  # not a terminal and no --yes: asks, writes nothing
    assert "pass --yes" in capsys.readouterr().err and snapshot(run_dir) == before

    assert main(["repair", str(run_dir), "--yes"]) == 0
    out = capsys.readouterr().out
    assert "line 2: not JSON" in out and f"line {node_line + 2}: wrong content" in out
    bad = next(run_dir.glob(f"{EVENTS_FILE}.bad-*")).read_bytes().splitlines(keepends=True)
    kept = (run_dir / EVENTS_FILE).read_bytes().splitlines(keepends=True)
    assert bad[0] == b"\xff\xfe not json\n" and b'"node": [1]' in bad[1]
    assert lost_node.encode() in bad[2]  # lines that name the lost node moved too (and theirs, in turn)
    assert sorted(kept + bad) == sorted(lines)  # nothing lost: every line is in one of the files
    assert next(run_dir.glob(f"{EVENTS_FILE}.torn-*")).read_bytes() == b'{"torn'

    assert main(["status", str(run_dir)]) == 0
    assert main(["repair", str(run_dir)]) == 0
    assert "nothing to repair" in capsys.readouterr().out


HOLD = """
import sys, time
from pathlib import Path
from engine.eventlog import EventLog
log = EventLog(Path(sys.argv[1]) / "events.jsonl")
print("held", flush=True)
time.sleep(60)
"""


@pytest.fixture
def holder(run_dir: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def test_second_writer_refused_stale_lock_taken_over(
    run_dir: Path, holder: subprocess.Popen[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["resume", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert f'"pid": {holder.pid}' in err and "Only one `silva run`/`silva resume`" in err
    assert main(["repair", str(run_dir), "--yes"]) == 2  # repair is a writer too
    assert main(["status", str(run_dir)]) == 0  # views work meanwhile

    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (run_dir / LOCK_FILE).exists()  # a killed writer leaves its lock file: stale
    assert main(["resume", str(run_dir)]) == 3  # taken over; the budget stops it again


def test_no_write_permission() -> None:
    """As an unprivileged user: views work on a run directory it cannot write; resume says why."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root to drop to another uid")
    top = Path(tempfile.mkdtemp(prefix="silva-ro-"))
    try:
        os.chmod(top, 0o755)
        # exit 3: a budget stopped the run
        assert main(["run", str(make_config(top, make_template(top / "tpl"), budgets={"max_nodes": 2}))]) == 3
        run = next((top / "runs").iterdir())
        for p in top.rglob("*"):
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        before = snapshot(run)
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        cmd = [*drop, sys.executable, "-m", "silva.cli.main"]
        env = {**os.environ, "HOME": str(top)}
        status = subprocess.run([*cmd, "status", str(run)], cwd=REPO, capture_output=True, text=True, env=env)
        assert status.returncode == 0, status.stderr
        resume = subprocess.run([*cmd, "resume", str(run)], cwd=REPO, capture_output=True, text=True, env=env)
        assert resume.returncode == 2 and "no permission to write this run directory" in resume.stderr
        assert "Traceback" not in resume.stderr and snapshot(run) == before
    finally:
        shutil.rmtree(top)


@pytest.mark.parametrize("status", ["interrupted", "budget"])
def test_last_line_names_the_resume_command(status: str, tmp_path: Path) -> None:
    out = io.StringIO()
    (tmp_path / "runs" / "r1").mkdir(parents=True)
    Journal.open(tmp_path / "runs" / "r1").log.close()
    report(Console(file=out, width=200), tmp_path / "runs" / "r1", RunOutcome(status, "stopped"))
    assert out.getvalue().splitlines()[-1] == f"continue with: silva resume {tmp_path / 'runs' / 'r1'}"
