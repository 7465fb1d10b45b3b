"""Structured outputs: tolerant extraction, validation, bounded re-asks; code-block extraction."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.llm import (
    Capabilities,
    FinalAnswer,
    StructuredOutputError,
    extract_code,
    extract_code_blocks,
    extract_json,
    summarize,
)
from engine.llm.structured import output_schema
from search.agentic.operators.schemas import BestChoice
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import gateway_for, make_cfg


class Plan(BaseModel):
    name: str
    epochs: int = Field(ge=1)


def test_extract_json_from_prose_and_fences() -> None:
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Sure!\n```json\n{"a": {"b": "}"}}\n```\nHope it helps.') == {"a": {"b": "}"}}
    assert extract_json('The plan is {"name": "x", "epochs": 3} as requested {not json}') == {
        "name": "x",
        "epochs": 3,
    }
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("I cannot do that.")


def test_reask_with_validation_error_then_success(fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(
        Reply.ok("no JSON here, sorry"),
        Reply.json({"name": "mlp", "epochs": 0}),
        Reply.json({"name": "mlp", "epochs": 5}),
    )
    gw = gateway_for(make_cfg("openai", fake.url, caps=Capabilities(tools=True)), tmp_path)
    try:
        plan = gw.client().complete("plan it", role="code", output_type=Plan, node_id="n1")
    finally:
        gw.close()
    assert plan == Plan(name="mlp", epochs=5)
    second, third = fake.requests[1].body["messages"], fake.requests[2].body["messages"]
    assert "no JSON object" in second[-1]["content"]  # the re-ask quotes what was wrong
    assert "greater than or equal to 1" in third[-1]["content"]
    assert second[-2]["role"] == "assistant"
    assert summarize(tmp_path)["by_node"]["n1"]["calls"] == 3  # every re-ask is accounted


class Untried(BaseModel):
    name: str

    @model_validator(mode="after")
    def _new(self) -> Untried:
        if self.name == "taken":
            raise FinalAnswer("every option is taken")
        return self


@pytest.mark.parametrize(
    ("kind", "reply", "output_type", "match", "requests"),
    [
        (
            "anthropic",
            Reply.ok("still not JSON"),
            Plan,
            "did not validate as Plan after 3 tries",
            3,
        ),  # bounded
        ("openai", Reply.json({"name": "taken"}), Untried, "every option is taken", 1),  # FinalAnswer: none
    ],
)
def test_reasks_are_bounded_and_a_final_answer_spends_none(
    fake: FakeLLMServer,
    tmp_path: Path,
    kind: str,
    reply: Reply,
    output_type: type[BaseModel],
    match: str,
    requests: int,
) -> None:
    fake.default = reply
    cfg = make_cfg(kind, fake.url)
    cfg.max_reasks = 2
    gw = gateway_for(cfg, tmp_path)
    try:
        with pytest.raises(StructuredOutputError, match=match):
            gw.client().complete("plan it", role="code", output_type=output_type)
    finally:
        gw.close()
    assert len(fake.requests) == requests


def test_extract_code_prefers_language_and_complete_blocks() -> None:
    text = (
        "Plan: train a model.\n```bash\npip install x\n```\n"
        "```python\nimport numpy as np\nprint(np.zeros(3))\n```\n"
        "and a helper:\n```py\nx = 1\n```\n"
    )
    assert extract_code(text) == "import numpy as np\nprint(np.zeros(3))"
    assert extract_code(text, "bash") == "pip install x"
    assert [b.language for b in extract_code_blocks(text)] == ["bash", "python", "py"]


def test_extract_code_untagged_tilde_and_truncated() -> None:
    assert extract_code("Here:\n```\nprint(1)\n```") == "print(1)"
    assert extract_code("~~~python\nprint(2)\n~~~") == "print(2)"
    # A nested fence of three backticks inside a four-backtick block does not close it.
    assert extract_code("````python\ns = '''\n```\n'''\n````") == "s = '''\n```\n'''"
    cut = "Sure:\n```python\nfor i in range(3):\n    print(i"
    block = extract_code_blocks(cut)[0]
    assert not block.closed and extract_code(cut) == "for i in range(3):\n    print(i"
    assert extract_code("no code at all") is None


def test_a_schema_is_named_by_its_title_so_a_validating_subclass_keeps_the_answers_name() -> None:
    """Providers and scripted servers see the response format's name: the selection's local
    subclass (it adds a validator on the candidates) asks for a `BestChoice`, as its title says."""

    class Choice(BestChoice):
        model_config = ConfigDict(title="BestChoice")

    assert output_schema(Choice).name == "BestChoice"
    assert output_schema(Plan).name == "Plan"
