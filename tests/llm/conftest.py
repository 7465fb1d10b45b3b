"""Fixtures for the LLM layer: a fake Anthropic/OpenAI server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm.fake_servers import FakeLLMServer


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server
