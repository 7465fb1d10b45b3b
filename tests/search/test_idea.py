"""Idea files and LLM-mode run configs: accepted shapes and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.errors import ConfigError
from search.idea import load_idea
from silva import lifecycle as run
from silva.config import load_config
from tests.search.agentic_helpers import IDEA, LLM, agentic_config, idea_file


def test_yaml_idea_with_defaults(tmp_path: Path) -> None:
    idea = load_idea(
        idea_file(tmp_path, metrics=[{"name": "loss", "direction": "minimize"}, {"name": "acc"}])
    )
    assert idea.name == "noise" and idea.primary.name == "loss"  # the first metric is primary by default
    assert "Planned experiments:\n- baseline" in idea.describe()


def test_ai_scientist_json_keys_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "idea.json"
    path.write_text(
        json.dumps(
            {
                "Name": "rff_digits",
                "Title": "Random features",
                "Short Hypothesis": "RFF help.",
                "Abstract": "...",
                "Experiments": "one paragraph of experiments",
                "Risk Factors and Limitations": ["overfitting"],
                "metrics": [{"name": "acc"}],
            }
        )
    )
    idea = load_idea(path)
    assert (idea.name, idea.hypothesis, idea.experiments) == (
        "rff_digits",
        "RFF help.",
        ["one paragraph of experiments"],
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({k: v for k, v in IDEA.items() if k != "metrics"}, "metrics: Field required"),
        (
            {**IDEA, "metrics": [{"name": "a", "primary": True}, {"name": "b", "primary": True}]},
            "at most one metric",
        ),
        ({**IDEA, "title": ""}, "title = ''"),
        ({**IDEA, "datasets": ["missing.csv"]}, "datasets.0"),
        ({**IDEA, "colour": "red"}, "colour = 'red': unknown field"),
        ([IDEA, IDEA], "one idea per file"),
    ],
)
def test_bad_ideas_say_what_and_where(tmp_path: Path, content: object, message: str) -> None:
    path = tmp_path / "idea.yaml"
    path.write_text(yaml.safe_dump(content))
    with pytest.raises(ConfigError) as err:
        load_idea(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_invalid_json_idea(tmp_path: Path) -> None:
    path = tmp_path / "idea.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_idea(path)


def write(tmp: Path, cfg: dict[str, object]) -> Path:
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_config_idea_mode_needs_llm_and_one_source(tmp_path: Path) -> None:
    idea = str(idea_file(tmp_path))
    with pytest.raises(ConfigError, match="needs an `llm:` section"):
        load_config(write(tmp_path, {"name": "x", "idea": idea}))
    with pytest.raises(ConfigError, match="exactly one of"):
        load_config(write(tmp_path, {"name": "x", "idea": idea, "ideas": [idea], "llm": LLM}))
    cfg = load_config(
        write(
            tmp_path,
            {"name": "x", "ideas": ["noise.yaml", {"path": "noise.yaml", "max_nodes": 5}], "llm": LLM},
        )
    )
    assert [s.max_nodes for s in cfg.idea_sources()] == [None, 5]
    assert all(s.path == tmp_path / "noise.yaml" for s in cfg.idea_sources())
    with pytest.raises(ConfigError, match="ideas.0.path"):
        load_config(write(tmp_path, {"name": "x", "ideas": ["nope.yaml"], "llm": LLM}))
    with pytest.raises(ConfigError, match="search.policy"):
        load_config(write(tmp_path, {"name": "x", "idea": idea, "llm": LLM, "search": {"policy": "random"}}))


def test_create_run_checks_ideas_llm_and_script_before_any_work(tmp_path: Path) -> None:
    a = idea_file(tmp_path, "a")
    same = idea_file(tmp_path / "other", "a")
    with pytest.raises(ConfigError, match="share the name 'a'"):
        run.create_run(agentic_config(tmp_path, ideas=[a, same]))
    b = idea_file(tmp_path, "b", metrics=[{"name": "val_accuracy", "direction": "minimize"}])
    with pytest.raises(ConfigError, match="val_accuracy' is maximize in one idea and minimize"):
        run.create_run(agentic_config(tmp_path, ideas=[a, b]))
    llm = {**LLM, "roles": {**LLM["roles"], "code": {"model": "missing"}}}
    with pytest.raises(ConfigError, match="llm.roles.code: model 'missing' is not defined"):
        run.create_run(agentic_config(tmp_path, llm=llm))
    with pytest.raises(ConfigError, match="nope.py not found"):
        run.create_run(agentic_config(tmp_path, scripted_fn="nope.py:respond"))
    assert not (tmp_path / "runs").exists()  # nothing was started
