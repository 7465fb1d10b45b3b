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

from search.idea import load_idea
from silva.cli.main import main
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
OFFLINE = (
    "silva init",
    "silva run my-study/",
    "silva writeup",
    "silva status",
    "silva view",
    "silva cost",
    "silva export",
)


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
    run_dir = next((tmp_path / "runs").iterdir())
    assert (run_dir / "view" / "index.html").is_file()
    assert (run_dir / "paper" / "label_noise" / "paper.pdf").is_file()  # step 2 ends with a paper
    assert {p.name for p in (tmp_path / "tables").iterdir()} == {"nodes.parquet", "events.parquet"}


def test_the_yaml_examples_validate(tmp_path: Path) -> None:
    idea, llm, cluster, config = blocks("yaml")
    (tmp_path / "idea.yaml").write_text(idea)
    assert load_idea(tmp_path / "idea.yaml").title == yaml.safe_load(idea)["title"]
    config_data = yaml.safe_load(config)
    config_data["template"] = str(REPO / "examples/digits_rff")
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(config_data))
    assert load_config(tmp_path / "demo.yaml").stages["hyperparameter"].max_nodes == 8


def without_sections(text: str, keys: set[str]) -> str:
    """The YAML text less the top-level entries `keys`: each key's line and its indented lines."""
    kept, dropping = [], False
    for line in text.splitlines(keepends=True):
        if line.strip() and not line[0].isspace() and not line.startswith("#"):
            dropping = line.split(":")[0] in keys
        if not dropping:
            kept.append(line)
    return "".join(kept)


def test_steps_4_and_5_pasted_as_the_text_says_give_a_valid_config(tmp_path: Path) -> None:
    """Step 4's block replaces everything from the `llm:` line to the end of the example; step 5's
    entries replace the ones it names. No key is written twice (that is refused), none is lost."""
    assert "replace everything from the `llm:` line to the\nend" in README
    assert "these entries replace the example's `output_dir:`, `executor:` and `sandbox:`" in README
    assert main(["init", "--example", "ideas", str(tmp_path / "my-study")]) == 0
    run_yaml = tmp_path / "my-study" / "run.yaml"
    example = run_yaml.read_text()
    _, llm, cluster, _ = blocks("yaml")
    run_yaml.write_text(example[: example.index("\nllm:\n") + 1] + llm)
    assert load_config(run_yaml).review is not None
    step5 = without_sections(run_yaml.read_text(), {"output_dir", "executor", "sandbox"}) + cluster
    run_yaml.write_text(step5)
    cfg = load_config(run_yaml)
    original = yaml.safe_load(example)
    assert cfg.budgets.dollars == original["budgets"]["dollars"] == 5.0
    assert cfg.budgets.node_timeout_s == original["budgets"]["node_timeout_s"]
    assert cfg.scripted_fn is None and cfg.review is not None and cfg.writeup is not None
    assert not cfg.writeup.offline and cfg.executor.address == "auto"


def test_readme_is_short() -> None:
    assert len(README.split()) <= 1600
