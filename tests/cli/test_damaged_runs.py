"""Damaged and hostile run directories (docs/cli.md, "When something fails"): a disk that fills
during a run, a missing or damaged payload at export, a read-only run directory for the view,
non-finite metrics, and status after `silva repair`. Each ends with an exit code, one line, a
journaled stop where a run was live, and no partial output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.eventlog import EVENTS_FILE
from engine.journal import Journal
from silva.cli.main import main
from tests.helpers import EXPERIMENT, make_config, make_template

SILVA = str(Path(sys.executable).with_name("silva"))


def in_namespace(script: str, tmp: Path) -> dict[str, str]:
    """`script` (bash) in a private mount namespace, where it may mount a small or read-only file
    system; what it prints as `KEY=VALUE` lines (values base64-free: one line each)."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"]).returncode != 0:
        pytest.skip("needs unshare -rm (a private mount namespace)")
    done = subprocess.run(
        ["unshare", "-rm", "bash", "-c", script], capture_output=True, text=True, timeout=600, cwd=tmp
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


# Fills the file system under `fill` once, at the third node, then reports as usual.
FILLING = (
    """
import os
spec = json.load(open("silva_params.json"))
fill = spec["params"]["fill"]
if spec["node_id"] == "n0002" and not os.path.exists(fill + ".done"):
    open(fill + ".done", "w").close()
    try:
        with open(fill, "wb") as f:
            while True:
                f.write(b"0" * 65536)
    except OSError:
        pass
"""
    + EXPERIMENT
)


@pytest.mark.e2e
def test_disk_full_during_a_run_stops_it_journaled_and_resumable(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    tpl = make_template(tmp_path / "tpl", fixed={"fill": str(disk / "fill")})
    (tpl / "experiment.py").write_text("import json\n" + FILLING)
    config = make_config(
        tmp_path, tpl, output_dir=str(disk / "runs"), executor={"kind": "inprocess", "max_in_flight": 1}
    )
    script = f"""
mount -t tmpfs -o size=4m tmpfs {disk} || exit 1
mkdir -p {tmp_path}/out
{SILVA} run {config} > {tmp_path}/out/run.out 2> {tmp_path}/out/run.err; echo "run=$?"
run=$(ls -d {disk}/runs/*); echo "dir=$run"
{SILVA} status $run > {tmp_path}/out/status.out 2>&1; echo "status=$?"
cp $run/{EVENTS_FILE} $run/silva.log {tmp_path}/out/
rm {disk}/fill
{SILVA} resume $run > {tmp_path}/out/resume.out 2>&1; echo "resume=$?"
"""
    got = in_namespace(script, tmp_path)
    out = tmp_path / "out"
    err = (out / "run.err").read_text()
    assert got["run"] == "3", err
    assert "Traceback" not in err
    run_dir = got["dir"]
    assert "error: No space left on device: " in err and "(the disk is full: free space there)" in err
    assert f"stop journaled; once fixed, continue with: silva resume {run_dir}" in err
    status = (out / "status.out").read_text()
    assert got["status"] == "0" and "state: stopped: No space left on device" in status
    nodes_line = next(line for line in status.splitlines() if line.startswith("experiment nodes:"))
    assert "running" not in nodes_line
    events = [json.loads(line) for line in (out / EVENTS_FILE).read_text().splitlines()]
    assert events[-1]["type"] == "run_stopped" and events[-1]["cause"] == "environment"
    assert "Traceback" in (out / "silva.log").read_text()  # the trace is kept, not shown
    assert got["resume"] == "0", (out / "resume.out").read_text()[-2000:]
    assert "finished: all four stages complete" in (out / "resume.out").read_text()


@pytest.fixture(scope="module")
def blob_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run whose nodes' output tails are large enough to be stored as blobs."""
    tmp = tmp_path_factory.mktemp("blobs")
    tpl = make_template(tmp / "tpl")
    (tpl / "experiment.py").write_text('print("x" * 700)\n' + EXPERIMENT)
    assert main(["run", str(make_config(tmp, tpl))]) == 0
    return next((tmp / "runs").iterdir())


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_export_with_a_damaged_payload_is_one_line_and_writes_nothing(
    damage: str, blob_run: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / blob_run.name
    shutil.copytree(blob_run, run_dir)
    blob = sorted((run_dir / "blobs").rglob("*/*"))[0]
    if damage == "missing":
        blob.unlink()
    else:
        blob.write_text("damaged")
    # A fresh process: this one has the original run's blobs cached (engine/blobs.py).
    done = subprocess.run(
        [SILVA, "export", str(run_dir), "--out", str(tmp_path / "tables")], capture_output=True, text=True
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: node n") and blob.name in line and "restore the run's blobs/" in line
    assert ("does not match its name" in line) == (damage == "corrupt")
    assert not (tmp_path / "tables").exists() and not (run_dir / "export").exists()


def test_export_out_and_default(blob_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / blob_run.name
    shutil.copytree(blob_run, run_dir)
    assert main(["export", str(run_dir), "--out", str(tmp_path / "tables")]) == 0
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == ["events.parquet", "nodes.parquet"]
    assert main(["export", str(run_dir)]) == 0
    assert (run_dir / "export" / "nodes.parquet").is_file()
    assert f"wrote {run_dir / 'export' / 'nodes.parquet'}" in capsys.readouterr().out


@pytest.mark.e2e
def test_view_of_a_read_only_run_falls_back_and_leaves_no_partial_view(
    blob_run: Path, tmp_path: Path
) -> None:
    run = tmp_path / blob_run.name
    shutil.copytree(blob_run, run)
    script = f"""
mount --bind {run} {run} && mount -o remount,bind,ro {run} || exit 1
XDG_CACHE_HOME={tmp_path}/cache {SILVA} view {run} > {tmp_path}/fallback.out 2>&1; echo "fallback=$?"
{SILVA} view {run} --out {run}/elsewhere > {tmp_path}/ro.out 2>&1; echo "ro=$?"
{SILVA} view {run} --out {tmp_path}/chosen > {tmp_path}/out.out 2>&1; echo "out=$?"
"""
    got = in_namespace(script, tmp_path)
    fallback = tmp_path / "cache" / "silva" / "views" / run.name
    text = (tmp_path / "fallback.out").read_text()
    assert got["fallback"] == "0" and f"{run} is not writable (Read-only file system)" in text
    assert f"writing the view to {fallback} instead" in text and (fallback / "index.html").is_file()
    ro = (tmp_path / "ro.out").read_text()
    assert got["ro"] == "3" and "Traceback" not in ro
    assert ro.strip().splitlines() == [ro.strip().splitlines()[0]] and "Read-only file system" in ro
    assert got["out"] == "0" and (tmp_path / "chosen" / "index.html").is_file()
    assert not (run / "view").exists() and not list(run.glob(".*partial"))


def test_a_failed_first_build_leaves_no_view(blob_run: Path, tmp_path: Path) -> None:
    from silva.view import build

    run = tmp_path / blob_run.name
    shutil.copytree(blob_run, run)

    def broken(data_json: str) -> str:
        raise OSError(28, "No space left on device")

    original, build.page = build.page, broken  # the page is the last file written
    try:
        with pytest.raises(OSError):
            build.build_view(run)
    finally:
        build.page = original
    assert not (run / "view").exists() and not list(run.glob(".view*"))


def strict(text: str) -> Any:
    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.e2e
def test_non_finite_metrics_are_null_with_a_reason_and_every_file_is_strict_json(tmp_path: Path) -> None:
    tpl = make_template(tmp_path / "tpl")
    (tpl / "experiment.py").write_text(
        EXPERIMENT
        + """
r = json.load(open("results.json"))
if p["x"] > 0.6 or p["x"] < 0.2:
    r["metrics"]["diverged"] = float("nan") if p["x"] > 0.6 else float("inf")
json.dump(r, open("results.json", "w"))
"""
    )
    assert main(["run", str(make_config(tmp_path, tpl, writeup={"offline": True}))]) in (0, 4)
    run_dir = next((tmp_path / "runs").iterdir())
    j = Journal.open(run_dir, read_only=True)
    buggy = [n for n in j if n.status.value == "buggy" and n.kind != "writeup"]
    assert buggy and all("diverged = " in n.reason and "(recorded as null)" in n.reason for n in buggy)
    assert all(n.metric("diverged") is None for n in buggy)
    checked = 0
    for path in run_dir.rglob("*"):
        if path.parent.name.startswith("attempt-") and path.name == "results.json":
            continue  # the experiment's own file, kept byte for byte as evidence
        if path.suffix == ".json":
            strict(path.read_text())
            checked += 1
        elif path.suffix == ".jsonl":
            for line in path.read_text().splitlines():
                strict(line)
            checked += 1
    assert checked >= 10


def test_status_after_repair_shows_no_running_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tpl = make_template(tmp_path / "tpl")
    assert main(["run", str(make_config(tmp_path, tpl))]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    events = run_dir / EVENTS_FILE
    lines = events.read_bytes().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if b'"attempt_finished"' in line)
    lines[last] = b"garbage\n"  # the end of one node's attempt is lost
    events.write_bytes(b"".join(lines))
    assert main(["repair", str(run_dir), "--yes"]) == 0
    capsys.readouterr()
    assert main(["status", str(run_dir)]) == 0
    out = capsys.readouterr().out
    nodes_line = next(line for line in out.splitlines() if line.startswith("experiment nodes:"))
    assert "running" not in nodes_line and "1 unfinished" in nodes_line and "state: finished" in out
    assert "running" not in out.lower() and "unfinished" in out.split("stages")[1]  # the table's column too
