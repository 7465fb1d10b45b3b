"""Both real SDKs against the fake wire-format server: text, structured outputs, images, truncation."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from engine.llm import Capabilities, Message, summarize
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import KINDS, TEST_KEY, gateway_for, make_cfg

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class Verdict(BaseModel):
    """Whether the experiment worked."""

    buggy: bool
    summary: str


@pytest.mark.parametrize("kind", KINDS)
def test_plain_success_usage_dollars_and_key(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.ok("print('hi')", usage=(1000, 200, 400)))
    gw = gateway_for(make_cfg(kind, fake.url), tmp_path)
    try:
        out = gw.client().complete(
            [Message.system("be brief"), Message.user("write code")], role="code", node_id="n1"
        )
    finally:
        gw.close()
    assert out.text == "print('hi')"
    assert (out.usage.input_tokens, out.usage.output_tokens, out.usage.cached_tokens) == (1000, 200, 400)
    # 600 uncached * $3 + 400 cached * $0.3 + 200 out * $15, per million tokens
    assert out.dollars == pytest.approx((600 * 3 + 400 * 0.3 + 200 * 15) / 1e6)
    req = fake.requests[0]
    assert req.headers["authorization"] == f"Bearer {TEST_KEY}"
    if kind == "anthropic":
        assert req.path == "/v1/messages"
        assert req.body["system"] == "be brief"
        assert req.body["temperature"] == 0.2 and req.body["max_tokens"] == 256
    else:
        assert req.path == "/v1/chat/completions"
        assert req.body["messages"][0] == {"role": "system", "content": "be brief"}
        assert req.body["temperature"] == 0.2 and req.body["max_completion_tokens"] == 256
    assert summarize(tmp_path)["by_node"]["n1"]["dollars"] == pytest.approx(out.dollars)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["tools", "json_schema", "text"])
def test_structured_output_each_capability(kind: str, mode: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    caps = Capabilities(tools=mode == "tools", json_schema=mode == "json_schema")
    fake.script(Reply.json({"buggy": False, "summary": "accuracy 0.93"}))
    gw = gateway_for(make_cfg(kind, fake.url, caps=caps), tmp_path)
    try:
        verdict = gw.client().complete("judge this run", role="feedback", output_type=Verdict)
    finally:
        gw.close()
    assert verdict == Verdict(buggy=False, summary="accuracy 0.93")
    body = fake.requests[0].body
    if mode == "tools":
        tool = body["tools"][0]
        assert (tool["name"] if kind == "anthropic" else tool["function"]["name"]) == "Verdict"
        assert body["tool_choice"]["type"] in ("tool", "function")
    elif mode == "json_schema":
        if kind == "anthropic":
            assert body["output_config"]["format"]["type"] == "json_schema"
        else:
            assert body["response_format"]["json_schema"]["schema"]["required"] == ["buggy", "summary"]
    else:
        assert "tools" not in body and "response_format" not in body and "output_config" not in body
        last = body["messages"][-1]["content"]
        text = last if isinstance(last, str) else json.dumps(last)
        assert "JSON schema" in text


@pytest.mark.parametrize("kind", KINDS)
def test_images_in_each_providers_format(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    gw = gateway_for(make_cfg(kind, fake.url), tmp_path)
    try:
        out = gw.client().complete(Message.user("critique these plots", images=[PNG, PNG]), role="vision")
    finally:
        gw.close()
    assert out.text == "hello from fake"
    assert fake.requests[0].images == 2  # the server decoded both as PNGs in its own format


def test_images_refused_for_model_without_vision(fake: FakeLLMServer, tmp_path: Path) -> None:
    from engine.llm import LLMCallError

    gw = gateway_for(make_cfg("anthropic", fake.url, caps=Capabilities(vision=False)), tmp_path)
    try:
        with pytest.raises(LLMCallError, match="no vision capability"):
            gw.client().complete(Message.user("see", images=[PNG]), role="code")
    finally:
        gw.close()
    assert fake.requests == []


@pytest.mark.parametrize("kind", KINDS)
def test_truncated_output_is_flagged(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.truncated("def train():\n    for epoch in ra"))
    gw = gateway_for(make_cfg(kind, fake.url), tmp_path)
    try:
        out = gw.client().complete("write code", role="code")
    finally:
        gw.close()
    assert out.truncated and out.stop_reason == "max_tokens"


def test_openai_compatible_uses_max_tokens_and_reasoning_flags(fake: FakeLLMServer, tmp_path: Path) -> None:
    cfg = make_cfg("openai_compatible", fake.url, api_key_env=None)
    gw = gateway_for(cfg, tmp_path)
    try:
        gw.client().complete("hi", role="code")
    finally:
        gw.close()
    assert fake.requests[0].body["max_tokens"] == 256 and "max_completion_tokens" not in fake.requests[0].body

    reasoning = Capabilities(reasoning=True, temperature=False)
    roles = {"code": {"model": "m", "max_tokens": 300, "reasoning_effort": "high"}}
    gw = gateway_for(make_cfg("openai", fake.url, caps=reasoning, roles=roles), tmp_path / "r")
    try:
        gw.client().complete("hi", role="code")
    finally:
        gw.close()
    body = fake.requests[1].body
    assert body["reasoning_effort"] == "high" and "temperature" not in body
