"""Prompts sized to the model: parts fitted by priority, minima that cannot fit refused with the
figure, and a run whose role models cannot hold the smallest prompt of their steps refused."""

from __future__ import annotations

import pytest

from engine.llm import LLMConfig, LLMConfigError, validate_llm_config
from engine.llm.prompt_budget import Part, PromptBudget, PromptTooLarge, budgets, too_small


def test_parts_are_cut_by_priority_and_keep_their_order() -> None:
    budget = PromptBudget(role="writeup", context_tokens=1000, max_tokens=400)  # ~1656 characters
    ledger, log, history = "L" * 300, "x" * 5000 + "END", "h" * 5000
    prompt = budget.fit(
        [
            Part(ledger, priority=0, min_chars=300),
            Part(log, priority=1, keep="tail"),
            Part(history, priority=2),
        ]
    )
    assert len(prompt) <= budget.chars
    assert prompt.startswith(ledger)  # the required part, whole and first
    assert prompt.count("x") < 5000 and "END" in prompt  # the log kept its tail
    assert "characters cut to fit the model's context" in prompt
    assert "h" not in prompt.split("END", 1)[1]  # no room left for the lowest priority


def test_a_prompt_that_fits_is_sent_whole() -> None:
    budget = PromptBudget(role="review", context_tokens=8192, max_tokens=512)
    parts = [Part("abc", priority=3), Part("def", min_chars=3)]
    assert budget.fit(parts, fixed="system") == "abcdef"


def test_minima_that_do_not_fit_are_refused_with_the_figures() -> None:
    budget = PromptBudget(role="writeup", context_tokens=2048, max_tokens=1024)
    with pytest.raises(PromptTooLarge, match=r"needs at least ~3333 tokens.*2048-token context"):
        budget.fit([Part("y" * 10_000, min_chars=10_000)])


def _cfg(context: int, max_tokens: int) -> LLMConfig:
    return LLMConfig.model_validate(
        {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {
                "m": {"provider": "offline", "model": "tiny", "capabilities": {"context_tokens": context}}
            },
            "roles": {"writeup": {"model": "m", "max_tokens": max_tokens}},
        }
    )


def test_a_model_too_small_for_a_role_is_refused_before_the_run() -> None:
    with pytest.raises(LLMConfigError, match=r"llm.roles.writeup: its model's 2048-token context") as info:
        validate_llm_config(_cfg(2048, 1024), {}, check_endpoints=False)
    assert "lower max_tokens to at most" in str(info.value) and info.value.exit_code == 2
    validate_llm_config(_cfg(8192, 1024), {}, check_endpoints=False)  # SmolLM2's context is enough


def test_a_role_without_its_own_minimum_needs_a_code_proposals_room() -> None:
    """The probe's served-context check is this one: any chat role (a node's judge) is held to it."""
    small = PromptBudget(role="feedback", context_tokens=2048, max_tokens=1024)  # ~976 tokens left
    (line,) = too_small({"feedback": small}, served="the server's /props")
    assert "the 2048-token context that the server's /props reports" in line
    assert "the feedback steps need at least 1000: lower max_tokens to at most 1000" in line
    assert too_small({"feedback": small.model_copy(update={"max_tokens": 1000})}) == []


def test_the_gateway_client_knows_each_role_budget() -> None:
    cfg = _cfg(8192, 512)
    assert budgets(cfg)["writeup"].tokens == 8192 - 512 - 48
