"""The CLI never shows a stack trace for a user's mistake or the machine's failure (docs/cli.md):
usage errors exit 2 with one line, config errors name the nearest valid key, environment failures
exit 3 with one line and the resume command, and traces go to RUN_DIR/silva.log (the terminal with -v)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from actors.ray_executor import RayStartError, start, start_wait_s
from silva.cli.main import main
from tests.helpers import make_config, make_template

REPO = Path(__file__).resolve().parents[2]


def silva(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The console script as a user runs it: a fresh process."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("silva")), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd or REPO,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stauts", "x"], "No such command 'stauts'. Did you mean 'status'?"),
        (["run", "--bogus", "x.yaml"], "No such option: --bogus"),
        (["run"], "Missing argument"),
        (["status"], "Missing argument"),
        (["view", "x", "--port", "nope"], "Invalid value for '--port'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and "--help" in err


def test_console_script_usage_error_and_version() -> None:
    done = silva("stauts")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip() == "error: No such command 'stauts'. Did you mean 'status'? (see: silva --help)"
    )
    done = silva("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"silva {importlib.metadata.version('silva')}"


def test_misspelled_config_key_names_the_nearest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = make_config(tmp_path, make_template(tmp_path / "tpl"), budgets={"max_node": 3})
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert "budgets.max_node = 3: unknown field; did you mean `max_nodes`?" in err and "Traceback" not in err


def test_misspelled_provider_option_names_the_nearest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = make_config(
        tmp_path, make_template(tmp_path / "tpl"), sandbox={"provider": "local", "options": {"bwarp": "x"}}
    )
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert "bwarp: the local sandbox has no such option; did you mean `bwrap`?" in err
    assert "Traceback" not in err
    ideas = REPO / "examples/ideas/run.yaml"
    cfg = yaml.safe_load(ideas.read_text())
    cfg["llm"]["providers"]["offline"]["max_concurency"] = 2
    cfg["idea"] = str(REPO / "examples/ideas" / cfg["idea"])
    cfg["scripted_fn"] = str(REPO / "examples/ideas" / cfg["scripted_fn"])
    (tmp_path / "llm.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["run", str(tmp_path / "llm.yaml")]) == 2
    assert (
        "llm.providers.offline.max_concurency = 2: unknown field; did you mean `max_concurrency`?"
        in capsys.readouterr().err
    )


def test_trace_only_with_verbose(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", str(tmp_path)]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert main(["-v", "status", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "not a Silva run directory" in err


def test_an_unwritable_output_dir_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    config = make_config(tmp_path, make_template(tmp_path / "tpl"), output_dir=str(blocker / "runs"))
    assert main(["run", str(config)]) == 3
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: Not a directory: {blocker / 'runs'}") and "try again" in line


def test_ray_start_retries_only_timeouts_with_a_longer_wait_when_loaded() -> None:
    calls: list[int] = []
    waits: list[float] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise Exception("The current node timed out during startup.")
        return "up"

    assert start(flaky, attempts=3, sleep=waits.append) == "up" and len(calls) == 3 and len(waits) == 2
    assert start_wait_s(1, load_per_cpu=8.0) > start_wait_s(1, load_per_cpu=0.5)
    with pytest.raises(RayStartError, match="Ray did not start after 2 tries: .*timed out"):
        start(
            lambda: (_ for _ in ()).throw(Exception("node timed out during startup")),
            attempts=2,
            sleep=waits.append,
        )

    def broken() -> str:
        calls.append(1)
        raise NotADirectoryError(20, "Not a directory", "/x/ray")

    calls.clear()
    with pytest.raises(RayStartError, match="Ray did not start: .*Not a directory") as e:
        start(broken, attempts=3, sleep=waits.append)
    assert len(calls) == 1 and e.value.exit_code == 3


@pytest.mark.e2e
def test_ray_that_does_not_start_is_a_stopped_run_not_a_running_one(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    config = make_config(
        tmp_path, make_template(tmp_path / "tpl"), executor={"kind": "ray", "max_in_flight": 1, "num_cpus": 1}
    )
    done = silva("run", str(config), env={"RAY_TMPDIR": str(blocker)})
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and "error: Ray did not start" in done.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    assert f"stop journaled; once fixed, continue with: silva resume {run_dir}" in done.stderr
    status = silva("status", str(run_dir))
    assert (
        "state: stopped: Ray did not start" in status.stdout and "running" not in status.stdout.split("\n")[1]
    )
    log = (run_dir / "silva.log").read_text()
    assert "Traceback" in log and "NotADirectoryError" in log and f"run directory: {run_dir}" in log
