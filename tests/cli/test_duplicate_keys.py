"""A key written twice in any Silva YAML file is an error naming both lines (exit 2): YAML's
loaders keep the last one silently, which dropped settings from a pasted block."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import load_yaml
from engine.errors import ConfigError
from silva.cli.main import main


def test_a_run_config_with_two_budgets_sections_is_refused_naming_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(
        "name: x\ntemplate: .\nbudgets:\n  node_timeout_s: 60\n" + "sandbox: none\nbudgets: {dollars: 2}\n"
    )
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "key 'budgets' is written twice, on lines 3 and 6" in err
    assert not (tmp_path / "runs").exists()


def test_nested_duplicates_in_an_idea_are_found(tmp_path: Path) -> None:
    path = tmp_path / "idea.yaml"
    path.write_text("name: i\nmetrics:\n  - {name: acc, primary: true, name: loss}\n")
    with pytest.raises(ConfigError, match="key 'name' is written twice, on lines 3 and 3"):
        load_yaml(path)


def test_anchors_merges_and_equal_keys_in_different_mappings_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {x: 1, y: 2}\na: {<<: *b, x: 3}\nb: {<<: *b, x: 4}\nc: [*b, *b]\n")
    assert load_yaml(path)["a"] == {"x": 3, "y": 2}


def test_a_discovery_prior_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    from search.discovery.data import load_prior

    path = tmp_path / "prior.yaml"
    path.write_text("question: why\nfacts: [a]\nquestion: how\n")
    with pytest.raises(ConfigError, match="key 'question' is written twice, on lines 1 and 3"):
        load_prior(path)
