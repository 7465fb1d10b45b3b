"""Fuzzed configs, idea files and template.yaml files: each loads or is refused with a
ConfigError (exit 2 from the CLI), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from search.idea import load_idea
from search.template.spec import Template
from silva.cli.main import main
from silva.config import RunConfig, load_config
from tests.fuzz import strategies as fz
from tests.helpers import make_template

FAST = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def dump(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True)


def loads_or_refuses(load: Any, path: Path) -> None:
    try:
        load(path)
    except ConfigError as e:
        assert len(str(e)) < 20_000, "an error message must not echo a whole document"


@settings(FAST, max_examples=25)
@given(cfg=fz.run_config)
def test_generated_configs(tmp_path: Path, cfg: dict[str, Any]) -> None:
    if not (tmp_path / "tpl").is_dir():
        make_template(tmp_path / "tpl")
    path = tmp_path / "run.yaml"
    path.write_text(dump(cfg))
    loads_or_refuses(load_config, path)


@FAST
@given(text=fz.yaml_text)
def test_raw_config_text_through_the_cli(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    try:
        assert isinstance(load_config(path), RunConfig)
    except ConfigError:
        assert main(["run", str(path)]) == 2


@FAST
@given(data=fz.idea, as_json=st.booleans())
def test_generated_idea_files(tmp_path: Path, data: dict[str, Any], as_json: bool) -> None:
    path = tmp_path / ("idea.json" if as_json else "idea.yaml")
    path.write_text(json.dumps(data, default=str) if as_json else dump(data))
    loads_or_refuses(load_idea, path)


@FAST
@given(text=fz.yaml_text, suffix=st.sampled_from([".yaml", ".json"]))
def test_raw_idea_text(tmp_path: Path, text: str, suffix: str) -> None:
    path = tmp_path / f"idea{suffix}"
    path.write_bytes(
        text.encode("utf-8", "surrogatepass") if suffix == ".yaml" else text.encode("latin-1", "replace")
    )
    loads_or_refuses(load_idea, path)


@FAST
@given(spec=fz.template, raw=st.one_of(st.none(), fz.yaml_text))
def test_generated_templates(tmp_path: Path, spec: dict[str, Any], raw: str | None) -> None:
    root = make_template(tmp_path / "tpl")
    (root / "template.yaml").write_text(dump(spec) if raw is None else raw)
    loads_or_refuses(Template.load, root)
