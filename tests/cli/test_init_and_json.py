"""`silva init` writes runnable examples from the installed package; `silva status --json` and
`silva cost --json` print their documented schemas (docs/cli.md)."""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from engine.journal import Journal
from silva.cli.init import FOLDERS, Example
from silva.cli.main import main
from silva.config import load_config
from tests.helpers import make_config, make_template

REPO = Path(__file__).resolve().parents[2]
SILVA = str(Path(sys.executable).with_name("silva"))


@pytest.mark.parametrize("example", list(Example))
def test_init_writes_a_config_that_loads(
    example: Example, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "ex"
    assert main(["init", "--example", example.value, str(target)]) == 0
    assert f"next: silva run {target / 'run.yaml'}" in capsys.readouterr().out
    shipped = {
        p.name for p in (REPO / "examples" / FOLDERS[example]).iterdir() if p.is_file() and p.suffix != ".pyc"
    }
    assert {p.name for p in target.iterdir()} == shipped
    load_config(target / "run.yaml")  # every file it names is there
    assert main(["init", "--example", example.value, str(target)]) == 2  # never over a user's files
    assert "exists and is not an empty directory" in capsys.readouterr().err


def test_every_example_file_ships_in_the_wheel() -> None:
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = package_data["silva"]
    assert (REPO / "silva" / "examples").resolve() == (REPO / "examples").resolve()
    for folder in FOLDERS.values():
        for path in (REPO / "examples" / folder).iterdir():
            if path.is_file() and path.suffix != ".pyc":
                rel = f"examples/{folder}/{path.name}"
                assert any(fnmatch.fnmatch(rel, p) for p in patterns), rel


@pytest.mark.e2e
def test_the_discovery_example_runs_from_an_empty_directory(tmp_path: Path) -> None:
    assert main(["init", "--example", "discovery", str(tmp_path / "ex")]) == 0
    done = subprocess.run(
        [SILVA, "run", str(tmp_path / "ex" / "run.yaml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "finished: DiscoPER: 12 hypotheses tested" in done.stdout


def test_status_and_cost_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(make_config(tmp_path, make_template(tmp_path / "tpl")))]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    capsys.readouterr()
    assert main(["status", str(run_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    j = Journal.open(run_dir, read_only=True)
    assert report["schema_version"] == 1 and report["state"] == "finished"
    assert (
        j.finished is not None and report["reason"] == j.finished.reason and report["run_dir"] == str(run_dir)
    )
    assert (
        # every state counted once: good and buggy, and a speculative node the run discarded
        report["nodes"]["total"] == len(j.nodes) == sum(v for k, v in report["nodes"].items() if k != "total")
    )
    assert report["primary_metric"] == {"name": "score", "direction": "maximize"}
    best = j.stage_best[("default", "ablation")]
    assert report["result"]["has_result"] and report["result"]["node"] == best.node_id
    assert report["result"]["value"] == best.value
    assert [s["stage"] for s in report["stages"]] == ["preliminary", "hyperparameter", "agenda", "ablation"]
    assert set(report["stages"][0]) == {
        "idea",
        "stage",
        "done",
        "good",
        "buggy",
        "running",
        "best_node",
        "best_value",
        "ended",
    }
    assert main(["cost", str(run_dir), "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)
    assert cost["schema_version"] == 1 and cost["spend"]["total"]["calls"] == 0 and "throughput" in cost
