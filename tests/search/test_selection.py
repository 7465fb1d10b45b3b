"""The best-node decision: the metric decides; the LLM breaks ties and checks sanity, once."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.dispatch import BudgetStop
from engine.llm import LLMConfig, build_gateway
from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import ScriptedProvider
from engine.node import MetricSpec, MetricValue, Node, NodeStatus
from search.idea import Idea
from search.selection import LLMChooser
from search.stages import Selection
from tests.search.agentic_helpers import IDEA, LLM

SPEC = MetricSpec(name="val_accuracy", primary=True)


def node(node_id: str, acc: float) -> Node:
    return Node(
        id=node_id,
        stage="agenda",
        kind="improve",
        status=NodeStatus.GOOD,
        metrics=[MetricValue(name="val_accuracy", value=acc, direction="maximize")],
    )


RANKED = [node("n1", 0.90), node("n2", 0.899), node("n3", 0.80)]


def choose(
    tmp: Path, answer: Callable[[ProviderCall], str], tolerance: float, dollars: float | None = None
) -> tuple[Node, dict[str, Any]]:
    llm = json.loads(json.dumps(LLM))
    llm["models"]["sci"]["price"] = {"input": 1.0, "output": 1.0}
    gw = build_gateway(
        LLMConfig.model_validate(llm),
        tmp,
        dollars,
        {},
        providers={"offline": ScriptedProvider("offline", fn=answer)},
    )
    chooser = LLMChooser(gw.client(), Idea.model_validate(IDEA), tolerance, "selection")
    try:
        # The decision runs as a job on a worker; a refused call stops the run as the dispatcher does.
        result = chooser.job_for(Node(id="s", stage="agenda", kind="selection"), 1, RANKED, SPEC).run([])
    finally:
        gw.close()
    if result.refusal is not None:
        raise BudgetStop(result.refusal.budget, result.refusal.message)
    assert isinstance(result.outcome, Selection)
    return next(n for n in RANKED if n.id == result.outcome.node_id), result.outcome.model_dump()


def says(node_id: str, sane: bool = True) -> Callable[[ProviderCall], str]:
    return lambda call: json.dumps({"node_id": node_id, "reason": "because", "metric_best_is_sane": sane})


def test_the_llm_breaks_a_tie(tmp_path: Path) -> None:
    chosen, record = choose(tmp_path, says("n2"), tolerance=0.005)
    assert chosen.id == "n2" and record["by"] == "LLM tie-break" and record["tied"] == ["n1", "n2"]


def test_without_a_tie_the_metric_stands_unless_the_best_is_flagged(tmp_path: Path) -> None:
    chosen, record = choose(tmp_path, says("n2"), tolerance=0.0)
    assert chosen.id == "n1" and record["by"].startswith("metric (the LLM's other choice")
    assert record["llm_choice"] == "n2" and record["llm_reason"] == "because"
    chosen, record = choose(tmp_path / "b", says("n3", sane=False), tolerance=0.0)
    assert chosen.id == "n3" and record["by"].startswith("LLM sanity check")


def test_an_unknown_node_is_reasked_and_a_failed_call_keeps_the_metric(tmp_path: Path) -> None:
    chosen, record = choose(tmp_path, says("n9"), tolerance=0.0)
    assert chosen.id == "n1" and record["by"] == "metric" and "must be one of" in str(record["llm_error"])


def test_a_spent_budget_stops_the_run_cleanly(tmp_path: Path) -> None:
    with pytest.raises(BudgetStop):
        choose(tmp_path, says("n1"), tolerance=0.0, dollars=0.0)
