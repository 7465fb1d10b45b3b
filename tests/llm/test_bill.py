"""The bill is complete: a cut answer is re-asked without its text, and what bought no usable
answer (a refused call, answers that did not validate, a chain that gave up) is a ledger line and
a cause in `silva cost`'s lost table."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field
from rich.console import Console

from engine.llm import Capabilities, LLMCallError, StructuredOutputError
from engine.llm.ledger import LEDGER_FILE, read_records
from silva.cli.cost import lost_table
from silva.cost import lost
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import gateway_for, make_cfg


class Idea(BaseModel):
    title: str
    steps: list[str]
    epochs: int = Field(ge=1)


RUNAWAY = '{"title": "' + "very " * 300  # a string that never closes, as SmolLM2 writes them


def cut(text: str = RUNAWAY) -> Reply:
    return Reply("truncated", text=text, usage=(300, 256, 0))


def test_a_cut_answer_is_reasked_without_its_text_and_under_bounded_strings(
    fake: FakeLLMServer, tmp_path: Path
) -> None:
    fake.script(cut(), cut(RUNAWAY[:800]), Reply.json({"title": "t", "steps": ["a"], "epochs": 2}))
    cfg = make_cfg("openai_compatible", fake.url, caps=Capabilities(json_schema=True))
    gw = gateway_for(cfg, tmp_path)
    try:
        idea = gw.client().complete("Propose an idea.", role="code", output_type=Idea, node_id="n1")
    finally:
        gw.close()
    assert idea.epochs == 2
    sent = [r.body for r in fake.requests]
    sizes = [len(json.dumps(b["messages"])) for b in sent]
    assert all(RUNAWAY[:100] not in json.dumps(b["messages"]) for b in sent[1:])  # the cut text stays out
    assert abs(sizes[2] - sizes[1]) < 20 and sizes[1] < sizes[0] + 400  # no growth per re-ask
    assert [m["role"] for m in sent[1]["messages"]] == ["user"]
    assert "ran past the output limit (256 tokens)" in sent[1]["messages"][-1]["content"]
    bounds = [b["response_format"]["json_schema"]["schema"]["properties"] for b in sent]
    assert "maxLength" not in bounds[0]["title"]
    first, second = bounds[1]["title"]["maxLength"], bounds[2]["title"]["maxLength"]
    assert second < first <= len(RUNAWAY) // 2 and bounds[1]["steps"]["maxItems"] == 8
    rows = read_records(tmp_path / LEDGER_FILE)
    assert [r.reask for r in rows] == [0, 1, 2] and len({r.chain for r in rows}) == 1
    (code,) = lost(rows)
    assert (code.invalid, code.invalid_tokens, code.gave_up) == (2, 512, 0)


def test_a_chain_that_gives_up_and_a_refused_call_are_on_the_bill(
    fake: FakeLLMServer, tmp_path: Path
) -> None:
    fake.default = Reply.ok("not JSON at all", usage=(40, 9, 0))
    caps = Capabilities(context_tokens=1000)
    gw = gateway_for(make_cfg("openai", fake.url, caps=caps), tmp_path)
    llm = gw.client()
    try:
        try:
            llm.complete("Propose an idea.", role="code", output_type=Idea, node_id="n1")
            raise AssertionError("the chain should have given up")
        except StructuredOutputError:
            pass
        try:
            llm.complete("x" * 4000, role="review", node_id="n2")  # ~1000 tokens + 256 > 1000
            raise AssertionError("an over-long prompt should be refused")
        except LLMCallError as exc:
            assert "exceeds the 1000-token context" in str(exc)
    finally:
        gw.close()
    assert len(fake.requests) == 3  # the refused call was never sent
    rows = read_records(tmp_path / LEDGER_FILE)
    end, refused = rows[-2], rows[-1]
    assert [r.cause for r in rows] == [None, None, None, "invalid", "refused"]  # one line for the give-up
    assert (end.cause, end.attempts, end.dollars, end.chain) == ("invalid", 0, 0.0, rows[0].chain)
    assert end.error is not None and "did not validate as Idea after 3 tries" in end.error
    assert (refused.cause, refused.role, refused.attempts, refused.model) == (
        "refused",
        "review",
        0,
        "fake-model",
    )
    by_role = {r.key: r for r in lost(rows)}
    code, review = by_role["code"], by_role["review"]
    assert (code.invalid, code.gave_up, code.invalid_tokens) == (3, 1, 27)
    assert code.invalid_dollars == sum(r.dollars for r in rows[:3]) > 0
    assert (review.refused, review.failed) == (1, 0)
    console = Console(width=200, record=True)
    console.print(lost_table(lost(rows)))
    text = console.export_text()
    assert "what bought no usable answer, by role and cause" in text
    assert "3 (1 gave up)" in text


def test_a_second_cut_is_reasked_under_half_the_bound_and_never_from_the_cache(
    fake: FakeLLMServer, tmp_path: Path
) -> None:
    """Cut twice at the same length: the second re-ask must not be the first one's request again
    (the response cache answered it with the same cut answer, for nothing)."""
    fake.script(cut(), cut(), Reply.json({"title": "t", "steps": ["a"], "epochs": 2}))
    cfg = make_cfg("openai_compatible", fake.url, caps=Capabilities(json_schema=True))
    gw = gateway_for(cfg, tmp_path)
    try:
        idea = gw.client().complete("Propose an idea.", role="code", output_type=Idea, node_id="n1")
    finally:
        gw.close()
    assert idea.epochs == 2
    sent = [r.body for r in fake.requests]
    assert len(sent) == 3  # every re-ask reached the model
    schemas = [b["response_format"]["json_schema"]["schema"]["properties"] for b in sent[1:]]
    first, second = (s["title"]["maxLength"] for s in schemas)
    assert second <= first // 2
    notes = [b["messages"][-1]["content"] for b in sent[1:]]
    assert "previous answer" in notes[0] and "previous 2 answers" in notes[1]
