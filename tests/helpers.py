"""Small templates and configs that tests build in a temporary directory."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

# An experiment whose metric is a smooth function of its parameters; it can sleep, fail or
# hang on request so dispatch, timeout and fault tests can drive it.
EXPERIMENT = """
import json, os, time
spec = json.load(open("silva_params.json"))
p, seed = spec["params"], spec["seed"] or 0
if p.get("first_sleep") and spec["attempt"] == 1 and spec["node_id"] == "n0000":
    open("sleeping", "w").close()  # gives a test time to kill the worker running this attempt
    time.sleep(p["first_sleep"])
time.sleep(p.get("sleep", 0))
if p.get("fail"):
    raise SystemExit("deliberate failure")
score = 1.0 - (p["x"] - 0.3) ** 2 - 0.1 * p["y"] + (0.05 if p["method"] else 0.0) - (0.02 if p["ab"] else 0.0)
score += 0.001 * seed
json.dump({"metrics": {"score": score, "cost": p["x"] + p["y"]}}, open("results.json", "w"))
"""

TEMPLATE: dict[str, Any] = {
    "name": "quad",
    "command": ["{python}", "experiment.py"],
    "metrics": [
        {"name": "score", "direction": "maximize", "primary": True},
        {"name": "cost", "direction": "minimize"},
    ],
    "hyperparameters": {
        "x": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.5},
        "y": {"type": "choice", "values": [0, 1, 2], "default": 1},
    },
    "method": {"name": "bonus", "param": "method"},
    "ablations": [{"name": "penalty", "param": "ab"}],
}


def make_template(root: Path, fixed: dict[str, Any] | None = None, **overrides: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "experiment.py").write_text(EXPERIMENT)
    spec = {**TEMPLATE, "fixed": fixed or {}, **overrides}
    (root / "template.yaml").write_text(yaml.safe_dump(spec))
    return root


def make_config(tmp: Path, template: Path, **overrides: Any) -> Path:
    cfg: dict[str, Any] = {
        "name": "t",
        "template": str(template),
        "output_dir": str(tmp / "runs"),
        "replicates": 2,
        "stages": {
            "preliminary": {"max_nodes": 2},
            "hyperparameter": {"max_nodes": 3},
            "agenda": {"max_nodes": 2},
            "ablation": {"max_nodes": 1},
        },
        "budgets": {"wall_clock_s": 300, "node_timeout_s": 60},
        "executor": {"kind": "inprocess", "max_in_flight": 3},
        "sandbox": "none",
    }
    return write_config(tmp, cfg, overrides)


def write_config(tmp: Path, cfg: dict[str, Any], overrides: dict[str, Any]) -> Path:
    """`cfg` with `overrides` merged one level deep (a dict updates a dict), as tmp/run.yaml."""
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = value
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def load_file(path: Path, name: str) -> ModuleType:
    """A module from a file outside the packages (an example, a benchmark script)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
