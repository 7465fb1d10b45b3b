"""Every command in the README works as written: the fenced shell commands are parsed; the
offline ones run in order in an empty directory (the path a new user follows), the others must be
listed here with the reason they cannot run in a test. The YAML examples validate."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.llm import LLMConfig
from search.idea import load_idea
from silva.config import load_config

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)

# Commands that need what a test does not have, with the reason.
NOT_RUN = {
    "make demo": "installs packages; the same run is tested in tests/search (template search)",
    "make test": "the whole suite",
    "make test-fast": "most of the suite",
}
OFFLINE = ("silva init", "silva run my-study/", "silva status", "silva view", "silva cost", "silva export")


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == kind]


def commands() -> list[str]:
    found = []
    for body in blocks("bash"):
        for line in body.splitlines():
            command = line.split("  #")[0].strip()
            if command:
                found.append(command)
    return found


def test_every_command_is_run_or_has_a_reason() -> None:
    found = commands()
    assert found, "no commands found"
    for command in found:
        assert command in NOT_RUN or command.startswith(OFFLINE), f"classify this README command: {command}"


@pytest.mark.e2e
def test_the_offline_path_runs_as_written(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    outputs = {}
    for command in commands():
        if command in NOT_RUN:
            continue
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, command
        outputs[command] = done.stdout

    # The sample of a run's last lines is what `silva run` prints.
    def shown(line: str) -> str:  # the run directory's path differs; the text up to the numbers must not
        return re.split(r"[0-9]", re.sub(r"\S*runs/label-noise-[0-9-]+", "RUN_DIR", line), maxsplit=1)[0]

    sample = blocks("text")[0].splitlines()
    run_out = [shown(line) for line in outputs["silva run my-study/run.yaml"].splitlines()]
    for line in sample:
        assert any(out.startswith(shown(line)) for out in run_out), line
    assert (next((tmp_path / "runs").iterdir()) / "view" / "index.html").is_file()
    assert {p.name for p in (tmp_path / "tables").iterdir()} == {"nodes.parquet", "events.parquet"}


def test_the_yaml_examples_validate(tmp_path: Path) -> None:
    idea, llm, cluster, config = (yaml.safe_load(b) for b in blocks("yaml"))
    (tmp_path / "idea.yaml").write_text(yaml.safe_dump(idea))
    assert load_idea(tmp_path / "idea.yaml").title == idea["title"]
    LLMConfig.model_validate(llm["llm"])
    ideas = yaml.safe_load((REPO / "examples/ideas/run.yaml").read_text())
    ideas.pop("scripted_fn")
    ideas.update(llm, idea=str(REPO / "examples/ideas/label_noise.yaml"), **cluster)
    (tmp_path / "real.yaml").write_text(yaml.safe_dump(ideas))
    cfg = load_config(tmp_path / "real.yaml")
    assert cfg.executor.address == "auto" and cfg.budgets.dollars == 20.0 and cfg.review is not None
    config["template"] = str(REPO / "examples/digits_rff")
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(config))
    assert load_config(tmp_path / "demo.yaml").stages["hyperparameter"].max_nodes == 8


def test_readme_is_short() -> None:
    assert len(README.split()) <= 1600
