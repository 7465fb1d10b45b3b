"""Template-based ideas (AI Scientist v1 mode): a run config with `template:` and `idea:` grows the
LLM search from the template's code; `silva ideate --template` ideas run that way end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.journal import Journal
from engine.node import NodeStatus
from search.agentic.operators.outcome import operator_outcome
from silva.cli.main import main
from tests.helpers import write_config
from tests.ideation.fake_literature import fake_literature
from tests.ideation.test_ideate import write_topic
from tests.search.agentic_helpers import (
    LLM,
    SCIENTIST,
    agentic_config,
    idea_file,
    llm_nodes,
    responder,
    start,
)

# The template imports a helper file: every node of the tree must find it in its workspace.
EXPERIMENT = '''"""A human-written template experiment: a smooth score of its settings."""
import json

from helper import BONUS

spec = json.load(open("silva_params.json"))
p, seed = spec["params"], spec["seed"] or 0
score = 1.0 - (p["x"] - 0.3) ** 2 - 0.1 * p["y"] + (BONUS if p["method"] else 0.0)
score -= 0.02 if p["ablate_penalty"] else 0.0
json.dump({"metrics": {"score": score + 0.001 * seed, "cost": p["x"] + p["y"]}}, open("results.json", "w"))
'''

TEMPLATE: dict[str, Any] = {
    "name": "quad",
    "description": "a quadratic score with a bonus method",
    "metrics": [
        {"name": "score", "direction": "maximize", "primary": True},
        {"name": "cost", "direction": "minimize"},
    ],
    "hyperparameters": {
        "x": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.5},
        "y": {"type": "int", "low": 0, "high": 4, "default": 1},
    },
    "method": {"name": "bonus", "param": "method"},
    "ablations": [{"name": "penalty", "param": "ablate_penalty"}],
}
DEFAULTS = {"method": False, "ablate_penalty": False, "x": 0.5, "y": 1}
SCORE_METRICS = [{"name": "score", "direction": "maximize", "primary": True}]


def make_template(root: Path, **overrides: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "experiment.py").write_text(EXPERIMENT)
    (root / "helper.py").write_text("BONUS = 0.05\n")
    (root / "template.yaml").write_text(yaml.safe_dump({**TEMPLATE, **overrides}))
    return root


def small_stages(**kw: Any) -> dict[str, Any]:
    return {
        "stages": {
            "preliminary": {"max_nodes": 2},
            "hyperparameter": {"max_nodes": 2},
            "agenda": {"max_nodes": 1},
            "ablation": {"max_nodes": 1},
        },
        "replicates": 1,
        **kw,
    }


@pytest.mark.timeout(120)
def test_template_idea_grows_from_the_template_code(tmp_path: Path) -> None:
    template = make_template(tmp_path / "tpl")
    idea = idea_file(tmp_path, metrics=SCORE_METRICS)
    cfg = agentic_config(tmp_path, idea=idea, template=str(template), **small_stages())
    assert cfg.mode == "agentic"
    outcome, j = start(cfg, responder(plots=False))
    assert outcome.status == "finished" and outcome.message == "all four stages complete"
    # The run reports the template's metrics (the idea declared only `score`).
    assert [m.name for m in j.metric_specs] == ["score", "cost"]

    # Stage 1's root is the template's code, run as written with its defaults: no draft, no LLM call.
    first = j.nodes["n0000"]
    assert first.kind == "template" and first.stage == "preliminary" and first.parent_id is None
    assert first.code == EXPERIMENT and first.status == NodeStatus.GOOD
    assert first.cost_usd == 0 and operator_outcome(first).llm_calls == 0
    assert not [n for n in j if n.kind == "draft"]
    assert j.stage_best[("noise", "preliminary")].node_id == first.id
    params = json.loads(
        (tmp_path / "runs").glob("*/nodes/n0000/attempt-1/silva_params.json").__next__().read_text()
    )
    assert params["params"] == DEFAULTS and params["seed"] == 0

    # The later stages change it: tuned settings, the method switched on, one component ablated.
    later = [n for n in llm_nodes(j) if n.stage != "preliminary"]
    assert {n.stage for n in later} == {"hyperparameter", "agenda", "ablation"}
    assert all(n.code != EXPERIMENT and n.status == NodeStatus.GOOD for n in later)
    assert all(n.parent_id == first.id for n in later if n.stage == "hyperparameter")
    agenda = j.nodes[j.stage_best[("noise", "agenda")].node_id or ""]
    tuned = j.nodes[agenda.parent_id]  # type: ignore[index]
    assert tuned.stage == "hyperparameter" and "'method': True" in agenda.code
    assert agenda.code != tuned.code and agenda.metric("score") != tuned.metric("score")
    ablation = next(n for n in later if n.stage == "ablation")
    assert operator_outcome(ablation).ablation == "ablate_penalty" and ablation.parent_id == agenda.id
    # The prompt showed the template's settings; every node got them and the template's other files.
    run_dir = j.log.path.parent
    for n in later:
        ws = run_dir / "nodes" / n.id / f"attempt-{n.attempts}"
        assert (ws / "helper.py").read_text() == "BONUS = 0.05\n"
        assert json.loads((ws / "silva_params.json").read_text())["params"] == DEFAULTS
    ledger = [json.loads(line) for line in (run_dir / "llm_ledger.jsonl").read_text().splitlines()]
    assert ledger and all(r["node_id"] != first.id for r in ledger)


@pytest.mark.timeout(60)
def test_a_failing_template_is_debugged_before_any_draft(tmp_path: Path) -> None:
    template = make_template(tmp_path / "tpl")
    (template / "helper.py").write_text("BONUS = undefined_name\n")  # the template itself crashes
    cfg = agentic_config(
        tmp_path,
        idea=idea_file(tmp_path, metrics=SCORE_METRICS),
        template=str(template),
        search={"max_debug_depth": 1, "num_drafts": 1},
        stages={
            "preliminary": {"max_nodes": 3},
            "hyperparameter": {"max_nodes": 1},
            "agenda": {"max_nodes": 1},
            "ablation": {"max_nodes": 1},
        },
    )
    _, j = start(cfg, responder(plots=False))
    first, second = j.nodes["n0000"], j.nodes["n0001"]
    assert first.kind == "template" and first.status == NodeStatus.BUGGY and "NameError" in first.reason
    # One debug step along the template's line (max_debug_depth 1), then the policy's draft.
    assert second.kind == "debug" and second.parent_id == first.id
    assert j.nodes["n0002"].kind == "draft"


def run_config(tmp: Path, **cfg: Any) -> Path:
    base: dict[str, Any] = {
        "name": "t",
        "output_dir": str(tmp / "runs"),
        "llm": LLM,
        "scripted_fn": f"{SCIENTIST}:respond",
        "budgets": {"wall_clock_s": 300, "node_timeout_s": 30},
        "executor": {"kind": "inprocess", "max_in_flight": 2},
        "sandbox": "none",
        "search": {"num_drafts": 1},
        **small_stages(),
    }
    return write_config(tmp, base, cfg)


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_ideate_with_a_template_then_run_its_idea(tmp_path: Path) -> None:
    template = make_template(tmp_path / "tpl")
    with fake_literature() as (url, _):
        topic = write_topic(tmp_path, url, topic="", num_ideas=1)
        assert (
            main(["ideate", str(topic), "--template", str(template), "--out", str(tmp_path / "ideas")]) == 0
        )
    # The run config names no template: the archive's ideas carry theirs.
    config = run_config(tmp_path)
    assert main(["run", str(config), "--ideas", str(tmp_path / "ideas" / "ideas.jsonl"), "--top", "1"]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    j = Journal.open(run_dir, read_only=True)
    assert j.finished is not None and "all four stages complete" in j.finished.reason
    first = j.nodes["n0000"]
    assert first.kind == "template" and first.idea == "smooth_asym" and first.code == EXPERIMENT
    later = [n for n in llm_nodes(j) if n.stage != "preliminary"]
    assert later and all(n.code != EXPERIMENT for n in later)
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["template"] == str(template.resolve())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"llm": None},
            "`template` with `idea`/`ideas` (the LLM search from the template's code) needs an `llm:` "
            "section",
        ),
        ({"variants": [{"name": "a"}]}, "`variants` (an offline template forest) and `idea`/`ideas`"),
        ({"template_command": ["{python}", "train.py"]}, "must run '{python} experiment.py'"),
        (
            {"idea_metrics": [{"name": "accuracy", "direction": "maximize"}]},
            "metric 'accuracy' is not reported by template 'quad'",
        ),
        (
            {"idea_metrics": [{"name": "score", "direction": "minimize"}]},
            "metric 'score' is minimize but template 'quad' declares it maximize",
        ),
    ],
)
def test_bad_combinations_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    command = change.pop("template_command", None)
    template = make_template(tmp_path / "tpl", **({"command": command} if command else {}))
    if command:
        (template / "train.py").write_text(EXPERIMENT)
    idea = idea_file(tmp_path, metrics=change.pop("idea_metrics", SCORE_METRICS))
    config = run_config(tmp_path, template=str(template), idea=str(idea), **change)
    assert main(["run", str(config)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
