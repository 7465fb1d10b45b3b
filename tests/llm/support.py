"""Helpers for the LLM tests: configs pointing at the fake server, gateways built from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.llm import Capabilities, Gateway, LLMConfig, Price, build_gateway

TEST_KEY_ENV = "SILVA_TEST_KEY"
TEST_KEY = "sk-secret-test-key"
PRICE = Price(input=3.0, output=15.0, cached_input=0.3)


def make_cfg(
    kind: str,
    url: str,
    *,
    caps: Capabilities | None = None,
    price: Price = PRICE,
    roles: dict[str, dict[str, Any]] | None = None,
    **provider: Any,
) -> LLMConfig:
    """One provider of `kind` at the fake server, one model, every role mapped to it."""
    base_url = url + "/v1" if kind in ("openai", "openai_compatible") else url
    prov = {
        "kind": kind,
        "base_url": base_url,
        "api_key_env": TEST_KEY_ENV,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.5,
        "timeout_s": 5.0,
        **provider,
    }
    caps = caps or Capabilities(vision=True)
    return LLMConfig.model_validate(
        {
            "providers": {"p": prov},
            "models": {
                "m": {
                    "provider": "p",
                    "model": "fake-model",
                    "capabilities": caps.model_dump(),
                    "price": price.model_dump(),
                }
            },
            "roles": roles
            or {
                r: {"model": "m", "temperature": 0.2, "max_tokens": 256}
                for r in ("code", "feedback", "vision", "review")
            },
        }
    )


def gateway_for(cfg: LLMConfig, run_dir: Path, dollars: float | None = None, **kw: Any) -> Gateway:
    return build_gateway(cfg, run_dir, dollars, {"p": TEST_KEY}, **kw)


KINDS = ["anthropic", "openai"]
