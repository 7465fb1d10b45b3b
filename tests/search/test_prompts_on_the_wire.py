"""What a real provider is sent: one node's think, run and judge (with the plot critique) through
the gateway to the fake OpenAI and Anthropic servers. What scripted providers answer by travels
in the request's context, never in a prompt (docs/llm.md, "Scripted answers")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.llm import LLM, LLMConfig, build_gateway
from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import ScriptedProvider
from engine.node import AttemptResult, Node
from search.agentic.operators.job import JudgeJob, RunJob, ThinkJob
from search.agentic.operators.outcome import OperatorOutcome
from search.agentic.strategy import AgenticSearch
from search.idea import load_idea
from silva import lifecycle
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import KINDS, gateway_for, make_cfg
from tests.search.agentic_helpers import LLM as SCRIPTED_LLM
from tests.search.agentic_helpers import agentic_config

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC"
EXPERIMENT = (
    "import json\njson.dump({'metrics': {'val_accuracy': 0.8, 'clean_fraction_kept': 1.0}}, "
    "open('results.json', 'w'))\n"
)
PLOT = f"import base64\nopen('fig.png', 'wb').write(base64.b64decode({PNG!r}))\n"
ANSWERS: list[dict[str, Any]] = [
    {"plan": "a logistic regression baseline", "code": EXPERIMENT, "plot_code": PLOT},
    {"is_buggy": False, "reason": "ran cleanly", "summary": "val_accuracy 0.8"},
    {"acceptable": True, "reason": "readable"},
]


def one_node(tmp: Path, llm: LLM) -> tuple[str, AttemptResult]:
    """A draft's three steps, each job as the search builds it from the journal."""
    cfg = agentic_config(tmp)
    _, journal = lifecycle.create_run(cfg)
    assert cfg.idea is not None
    idea = load_idea(cfg.idea)
    node = journal.add_node(Node(stage="preliminary", kind="draft", idea=idea.name))
    search = AgenticSearch(cfg, journal, idea, llm, vision=True)
    journal.attempt_started(node.id, 1, "think")
    for kind in (ThinkJob, RunJob):
        job = search.job_for(journal.nodes[node.id], 1)
        assert isinstance(job, kind), job
        result = job.run([])
        assert not isinstance(result, AttemptResult), result
        journal.step_finished(node.id, 1, result)
    judge = search.job_for(journal.nodes[node.id], 1)
    assert isinstance(judge, JudgeJob), judge
    return node.id, judge.run([])


def critiqued(result: AttemptResult) -> bool:
    out = result.outcome
    return isinstance(out, OperatorOutcome) and out.plot_critique is not None and out.plot_critique.acceptable


@pytest.mark.parametrize("kind", KINDS)
def test_no_test_seam_reaches_a_real_provider(tmp_path: Path, kind: str) -> None:
    with FakeLLMServer() as fake:
        fake.script(*(Reply.json(a) for a in ANSWERS))
        gateway = gateway_for(make_cfg(kind, fake.url), tmp_path / "gateway")
        try:
            _, result = one_node(tmp_path, gateway.client())
        finally:
            gateway.close()
    assert result.status == "good" and critiqued(result), result
    sent = [json.dumps(r.body) for r in fake.requests]
    assert len(sent) == 3 and not [body for body in sent if "[silva" in body]


def test_scripted_providers_answer_by_the_context(tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []

    def answer(call: ProviderCall) -> str:
        seen.append(dict(call.context))
        return json.dumps(ANSWERS[("code", "feedback", "vision").index(call.role)])

    offline = ScriptedProvider("offline", fn=answer)
    gateway = build_gateway(
        LLMConfig.model_validate(SCRIPTED_LLM), tmp_path / "gateway", None, {}, providers={"offline": offline}
    )
    try:
        node_id, result = one_node(tmp_path, gateway.client())
    finally:
        gateway.close()
    assert result.status == "good" and critiqued(result)
    assert seen == [
        {"operator": "draft", "node": node_id, "stage": "preliminary", "idea": "noise"},
        {"judge": "run", "node": node_id, "stage": "preliminary"},
        {"critique": "plots", "node": node_id},
    ]
    assert not [m.text for c in offline.calls for m in c.messages if "[silva" in m.text]
