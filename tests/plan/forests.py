"""An agentic forest config for plans: hosted models named but never called (a plan needs no key)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.search.agentic_helpers import idea_file

STAGES = ("preliminary", "hyperparameter", "agenda", "ablation")


def forest(tmp: Path, ideas: int = 4, max_nodes: int = 4, papers: bool = False) -> Path:
    """`ideas` agentic ideas (i0, i1...) on 4 slots, stages of `max_nodes` nodes; with `papers`,
    each idea's LLM writeup and review too."""
    roles = ("code", "feedback", "selection", *(("writeup", "review") if papers else ()))
    llm = {
        "providers": {"anthropic": {"kind": "anthropic", "api_key_env": "SILVA_TEST_NO_SUCH_KEY"}},
        "models": {"haiku": {"provider": "anthropic", "model": "claude-haiku-4-5"}},
        "roles": {r: {"model": "haiku"} for r in roles},
    }
    cfg = {
        "name": "forest",
        "ideas": [{"path": str(idea_file(tmp, f"i{k}"))} for k in range(ideas)],
        "output_dir": str(tmp / "runs"),
        "replicates": 1,
        "stages": {s: {"max_nodes": max_nodes} for s in STAGES},
        "budgets": {"wall_clock_s": None},
        "executor": {"kind": "inprocess", "max_in_flight": 4},
        "sandbox": "none",
        "llm": llm,
        **({"writeup": {}, "review": {}} if papers else {}),
    }
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path
