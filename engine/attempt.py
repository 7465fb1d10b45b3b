"""One experiment attempt: fresh workspace, sandboxed run, results read through the file contract."""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.contract import PARAMS_FILE, params_payload, parse_results, read_results
from engine.node import AttemptResult, ExecSummary, MetricSpec
from sandbox.base import ExecResult, Limits, get_provider, kept_artifacts

TAIL_CHARS = 4000


def attempt_dir(run_dir: Path, node_id: str, attempt: int) -> Path:
    return run_dir / "nodes" / node_id / f"attempt-{attempt}"


def fresh_workspace(run_dir: Path, node_id: str, attempt: int) -> Path:
    """A new, empty workspace. A leftover from a killed driver is removed, never reused."""
    ws = attempt_dir(run_dir, node_id, attempt)
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    # Which worker process runs this attempt: for operators and for the fault-injection tests.
    marker = ws.parent / f"attempt-{attempt}.worker.json"
    marker.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
    return ws


def summarize(res: ExecResult) -> ExecSummary:
    return ExecSummary(
        exit_code=res.exit_code,
        timed_out=res.timed_out,
        oom_killed=res.oom_killed,
        wall_s=res.wall_s,
        cpu_s=res.cpu_s,
        stdout_tail=res.stdout[-TAIL_CHARS:],
        stderr_tail=res.stderr[-TAIL_CHARS:],
    )


def failure_reason(res: ExecResult, limits: Limits) -> str:
    """'' when the process itself succeeded; otherwise why it did not, for a person."""
    if res.timed_out:
        return f"timed out after {limits.wall_s:g} s (per-node timeout)"
    if res.oom_killed:
        return f"out of memory (limit {limits.memory_mb} MB)"
    if res.exit_code != 0:
        last = next((ln for ln in reversed(res.stderr.strip().splitlines()) if ln.strip()), "")
        return f"exit code {res.exit_code}" + (f": {last[:300]}" if last else "")
    return ""


@dataclass
class ExperimentJob:
    """Copy the experiment files in, write the params, run the command, read results.json."""

    node_id: str
    attempt: int
    run_dir: Path
    files: dict[str, bytes]
    command: list[str]
    params: dict[str, Any]
    seed: int | None
    stage: str
    metrics: list[MetricSpec]
    limits: Limits
    sandbox: str
    sandbox_options: dict[str, Any] = field(default_factory=dict)

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        started = time.time()
        ws = fresh_workspace(self.run_dir, self.node_id, self.attempt)
        box = get_provider(self.sandbox, **self.sandbox_options).open(ws, gpu_ids=gpu_ids)
        try:
            files = {
                **self.files,
                PARAMS_FILE: params_payload(
                    self.params, seed=self.seed, node_id=self.node_id, stage=self.stage, attempt=self.attempt
                ),
            }
            res = box.exec(self.command, limits=self.limits, files=files)
            raw, unreadable = read_results(box, res.files)
        finally:
            box.close()
        values, parsed, problem = parse_results(raw, self.metrics)
        reason = failure_reason(res, self.limits) or unreadable or problem
        rel = ws.relative_to(self.run_dir)
        # Confined like every mode's: `../`, absolute paths and symlinks out are never kept.
        artifacts = kept_artifacts(ws, rel, parsed.artifacts if parsed else [])
        return AttemptResult(
            status="buggy" if reason else "good",
            reason=reason,
            metrics=values,
            execution=summarize(res),
            artifacts=artifacts,
            workspace=str(rel),
            started_at=started,
            finished_at=time.time(),
        )
