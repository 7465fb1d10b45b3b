"""Damaged run directories: truncated or garbled journals, wrong types, missing or broken
config.yaml, no write permission. Read-only commands end with exit 0 or 2, never a traceback,
and never change a byte of the run directory."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.eventlog import EVENTS_FILE
from engine.writerlock import LOCK_FILE
from silva.cli.main import main
from tests.engine.test_integrity import snapshot
from tests.fuzz import strategies as fz
from tests.helpers import make_config, make_template

truncate = st.tuples(st.just("truncate"), st.floats(0, 1))
garbage = st.tuples(st.just("garbage"), st.floats(0, 1), st.binary(min_size=1, max_size=60))
wrong_type = st.tuples(
    st.just("wrong_type"),
    st.floats(0, 1),
    st.sampled_from(
        [
            "type",
            "ts",
            "node",
            "node_id",
            "result",
            "config",
            "metrics",
            "stage",
            "idea",
            "attempt",
            "best_node_id",
        ]
    ),
    fz.values,
)
drop_line = st.tuples(st.just("drop_line"), st.floats(0, 1))
config = st.tuples(st.just("config"), st.one_of(st.none(), fz.yaml_text))
read_only = st.tuples(st.just("read_only"))
damages = st.lists(
    st.one_of(truncate, garbage, wrong_type, drop_line, config, read_only), min_size=1, max_size=3
)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fuzzrun")
    # exit 3: a budget stopped the run
    assert main(["run", str(make_config(tmp, make_template(tmp / "tpl"), budgets={"max_nodes": 5}))]) == 3
    return next((tmp / "runs").iterdir())


def apply(run: Path, damage: tuple[Any, ...]) -> None:
    events = run / EVENTS_FILE
    lines = events.read_bytes().splitlines(keepends=True) if events.exists() else []
    at = (
        min(int(damage[1] * len(lines)), max(len(lines) - 1, 0))
        if len(damage) > 1 and isinstance(damage[1], float)
        else 0
    )
    kind = damage[0]
    if kind == "truncate":
        data = events.read_bytes()
        events.write_bytes(data[: int(damage[1] * len(data))])
    elif kind == "garbage":
        events.write_bytes(b"".join([*lines[:at], damage[2] + b"\n", *lines[at:]]))
    elif kind == "wrong_type" and lines:
        try:
            event = json.loads(lines[at])
        except ValueError:
            return
        event[damage[2]] = damage[3]
        lines[at] = json.dumps(event, default=str).encode() + b"\n"
        events.write_bytes(b"".join(lines))
    elif kind == "drop_line" and lines:
        events.write_bytes(b"".join(lines[:at] + lines[at + 1 :]))
    elif kind == "config":
        if damage[1] is None:
            (run / "config.yaml").unlink(missing_ok=True)
        else:
            (run / "config.yaml").write_text(damage[1])
    elif kind == "read_only":
        for p in [run, *run.rglob("*")]:
            os.chmod(p, 0o555 if p.is_dir() else 0o444)


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=damages)
def test_read_only_commands_on_damaged_run_dirs(
    finished_run: Path, tmp_path: Path, plan: list[tuple[Any, ...]], capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    if run.exists():
        for p in [run, *run.rglob("*")]:
            os.chmod(p, 0o755)
        shutil.rmtree(run)
    shutil.copytree(finished_run, run, ignore=shutil.ignore_patterns(LOCK_FILE))
    for damage in plan:
        apply(run, damage)
    before = snapshot(run)
    for argv in (["status", str(run)], ["export", str(run), "--out", str(tmp_path / "export")]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code in (0, 2), (argv, code, err)
        assert "Traceback" not in err
        assert snapshot(run) == before, argv
