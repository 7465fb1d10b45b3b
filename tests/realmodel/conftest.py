"""A real model for the tests of this folder: llama.cpp's server with SmolLM2-135M-Instruct on
127.0.0.1, started once per session (tests/realmodel/llama_server.py). Skipped, saying why, when
the `realmodel` extra or the model wheel is not installed. Select with `-m realmodel`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realmodel.llama_server import MODEL_ID, LocalServer, missing, start


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # every test here talks to the model: seconds to minutes each
        if "tests/realmodel/" in str(item.fspath):
            item.add_marker(pytest.mark.realmodel)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    why = missing()
    if why is not None:
        pytest.skip(f"no real model here: {why}")
    server = start(tmp_path_factory.mktemp("llama") / "server.log")
    try:
        yield server
    finally:
        server.stop()


def llm_section(url: str, *, timeout_s: float = 600.0, **max_tokens: int) -> dict[str, Any]:
    """The run config's `llm:` for the local model: `openai_compatible`, free, JSON schema through
    llama.cpp's grammars, an embedding role on the same model. A long timeout: on a loaded 2-core
    host the model wrote 3.7 tokens/s (load average 19) where an idle one gives 77-92."""
    roles: dict[str, Any] = {
        role: {"model": "smol", "temperature": 0.2, "max_tokens": tokens}
        for role, tokens in max_tokens.items()
    }
    roles["embedding"] = {"model": "smol"}
    return {
        "providers": {
            "local": {
                "kind": "openai_compatible",
                "base_url": url,
                "timeout_s": timeout_s,
                "max_retries": 1,
                "max_concurrency": 2,  # the server's slots
            }
        },
        "models": {
            "smol": {
                "provider": "local",
                "model": MODEL_ID,
                "price": {"input": 0, "output": 0},
                "capabilities": {
                    "json_schema": True,
                    "embeddings": True,
                    "context_tokens": 8192,
                    "max_output_tokens": 2048,
                },
            }
        },
        "roles": roles,
        "max_reasks": 2,
    }


def log_tail(server: LocalServer, lines: int = 20) -> str:
    return "\n".join(Path(server.log).read_text(errors="replace").splitlines()[-lines:])
