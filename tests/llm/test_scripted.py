"""The scripted provider: rules from YAML for offline demos, callables from Python for tests."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel

from engine.llm import LLMConfig, Message, ScriptRule, build_gateway, summarize, validate_llm_config
from engine.llm.providers.scripted import ScriptedProvider, last_user_text

YAML = """
providers:
  offline: {kind: scripted, default_response: "I have nothing to add."}
models:
  toy: {provider: offline, model: toy-1}
roles:
  code: {model: toy, max_tokens: 1000}
  feedback: {model: toy}
  selection: {model: toy}
rules:
"""


class Judgement(BaseModel):
    buggy: bool
    metric: float


def _cfg() -> LLMConfig:
    data = yaml.safe_load(YAML.replace("rules:\n", ""))
    data["providers"]["offline"]["rules"] = yaml.safe_load("""
- {role: code, contains: "fix", respond: "```python\\nprint('fixed')\\n```"}
- {role: code, respond: "```python\\nprint('draft')\\n```"}
- {role: feedback, respond: {buggy: false, metric: 0.91}}
- {pattern: "node [0-9]+", respond: "node 3"}
""")
    return LLMConfig.model_validate(data)


def test_yaml_rules_answer_by_role_text_and_regex(tmp_path: Path) -> None:
    cfg = _cfg()
    validate_llm_config(cfg, {})  # no key, no endpoint, no price needed
    gw = build_gateway(cfg, tmp_path, None, {})
    llm = gw.client()
    try:
        assert "print('draft')" in llm.complete("write a model", role="code").text
        assert "print('fixed')" in llm.complete("please fix the bug", role="code").text
        assert llm.complete("judge it", role="feedback", output_type=Judgement) == Judgement(
            buggy=False, metric=0.91
        )
        assert llm.complete("choose: node 3 or node 4", role="selection").text == "node 3"
        assert llm.complete("anything else", role="selection").text == "I have nothing to add."
    finally:
        gw.close()
    run = summarize(tmp_path)["run"]
    assert run["calls"] == 5 and run["input_tokens"] > 0 and run["output_tokens"] > 0 and run["dollars"] == 0


def test_python_callables_and_function_provider(tmp_path: Path) -> None:
    cfg = _cfg()
    echo = ScriptRule(role="code", respond=lambda msgs: f"echo: {last_user_text(msgs)}")
    provider = ScriptedProvider("offline", rules=[echo], fn=lambda call: f"{call.role} via fn")
    gw = build_gateway(cfg, tmp_path, None, {}, providers={"offline": provider})
    llm = gw.client()
    try:
        assert llm.complete([Message.system("s"), Message.user("hello")], role="code").text == "echo: hello"
        assert llm.complete("x", role="selection").text == "selection via fn"
    finally:
        gw.close()
    assert [c.role for c in provider.calls] == ["code", "selection"]


def test_scripted_truncates_at_max_tokens(tmp_path: Path) -> None:
    cfg = _cfg()
    provider = ScriptedProvider("offline", fn=lambda call: "y" * 10_000)
    gw = build_gateway(cfg, tmp_path, None, {}, providers={"offline": provider})
    try:
        out = gw.client().complete("long please", role="code")
    finally:
        gw.close()
    assert out.truncated and len(out.text) == 4000 and out.usage.output_tokens == 1000
