"""Invalid configs get a message naming the field, the value and what is allowed; exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.errors import ConfigError
from silva.cli.main import main
from silva.config import load_config
from tests.helpers import make_config, make_template


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


@pytest.fixture
def template(tmp_path: Path) -> Path:
    return make_template(tmp_path / "tpl")


def test_valid_config_resolves_paths(tmp_path: Path, template: Path) -> None:
    cfg = load_config(make_config(tmp_path, template))
    assert cfg.template == template.resolve()
    assert cfg.stages["hyperparameter"].max_nodes == 3
    assert cfg.sandbox.provider == "none"


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        (
            {"stages": {"hyperparameter": {"max_nodes": -1}}},
            "stages.hyperparameter.max_nodes = -1: Input should be greater than or equal to 1",
        ),
        (
            {"sandbox": "chroot"},
            "sandbox.provider = 'chroot': unknown sandbox provider 'chroot'; available: docker, local, none",
        ),
        (
            {"budgets": {"wall_clock_s": "soon"}},
            "budgets.wall_clock_s = 'soon': Input should be a valid number",
        ),
        ({"executor": {"kind": "slurm"}}, "executor.kind = 'slurm': Input should be 'ray' or 'inprocess'"),
        ({"replicats": 3}, "replicats = 3: unknown field"),
        ({"name": "has space"}, "name = 'has space': String should match pattern"),
    ],
)
def test_invalid_field_named_with_value_and_allowed(
    tmp_path: Path, template: Path, patch: dict, expected: str
) -> None:
    data = yaml.safe_load(make_config(tmp_path, template).read_text())
    for key, value in patch.items():
        data[key] = (
            {**data[key], **value} if isinstance(value, dict) and isinstance(data.get(key), dict) else value
        )
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, data))
    assert expected in str(err.value)
    assert "bad.yaml" in str(err.value)


def test_template_and_idea_are_exclusive(tmp_path: Path, template: Path) -> None:
    with pytest.raises(ConfigError, match="exactly one of `template`"):
        load_config(write(tmp_path, {"name": "x"}))


def test_missing_template_dir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no template.yaml there"):
        load_config(write(tmp_path, {"name": "x", "template": "nowhere"}))


def test_not_yaml_and_not_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "name: [unclosed"))
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(write(tmp_path, "- a\n- b\n"))


def test_cli_exit_code_2_no_traceback(
    tmp_path: Path, template: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, {"name": "x", "template": str(template), "replicates": 0})
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "replicates = 0: Input should be greater than or equal to 1" in err
    assert "Traceback" not in err
    assert not (tmp_path / "runs").exists()  # nothing created for a bad config


def test_cli_missing_file_and_bad_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "absent.yaml")]) == 2
    assert "file not found" in capsys.readouterr().err
    assert main(["status", str(tmp_path)]) == 2
    assert "not a Silva run directory" in capsys.readouterr().err


def test_bad_template_spec(tmp_path: Path) -> None:
    tpl = make_template(
        tmp_path / "tpl", hyperparameters={"x": {"type": "float", "low": 2, "high": 1, "default": 1}}
    )
    path = make_config(tmp_path, tpl)
    assert main(["run", str(path)]) == 2
