"""Bad input is a clear error at start, naming the entry at fault, before any call is made."""

from __future__ import annotations

import socket

import pytest

from engine.errors import ConfigError
from engine.llm import LLMConfig, LLMConfigError, take_api_keys, validate_llm_config
from tests.llm.fake_servers import FakeLLMServer
from tests.llm.support import TEST_KEY, TEST_KEY_ENV, make_cfg

ENV = {TEST_KEY_ENV: TEST_KEY}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_valid_config_passes_with_reachable_endpoint(fake: FakeLLMServer) -> None:
    validate_llm_config(make_cfg("anthropic", fake.url), ENV)


def test_provider_without_its_key(fake: FakeLLMServer) -> None:
    with pytest.raises(
        LLMConfigError, match=f"llm.providers.p: environment variable {TEST_KEY_ENV}.*not set"
    ):
        validate_llm_config(make_cfg("openai", fake.url), {})
    cfg = make_cfg("anthropic", fake.url, api_key_env=None)
    with pytest.raises(LLMConfigError, match="llm.providers.p: set api_key_env"):
        validate_llm_config(cfg, ENV)


def test_model_without_price_and_default_table() -> None:
    cfg = LLMConfig.model_validate(
        {
            "providers": {"a": {"kind": "anthropic", "api_key_env": TEST_KEY_ENV}},
            "models": {
                "mystery": {"provider": "a", "model": "claude-unknown-9"},
                "known": {"provider": "a", "model": "claude-sonnet-4-5"},
            },
            "roles": {"code": {"model": "mystery"}, "vision": {"model": "known"}},
        }
    )
    with pytest.raises(
        LLMConfigError, match="llm.models.mystery: no price known for model id 'claude-unknown-9'"
    ) as err:
        validate_llm_config(cfg, ENV, check_endpoints=False)
    assert "llm.models.known" not in str(err.value)  # the default table prices claude-sonnet-4-5


def test_role_pointing_to_unknown_model_and_unknown_role(fake: FakeLLMServer) -> None:
    cfg = make_cfg("anthropic", fake.url, roles={"code": {"model": "gpt-9"}, "coder": {"model": "m"}})
    with pytest.raises(LLMConfigError) as err:
        validate_llm_config(cfg, ENV)
    assert "llm.roles.code: model 'gpt-9' is not defined" in str(err.value)
    assert "llm.roles.coder: unknown role" in str(err.value)
    assert isinstance(err.value, ConfigError) and err.value.exit_code == 2  # the CLI prints it plainly


def test_unreachable_endpoint() -> None:
    cfg = make_cfg("openai_compatible", f"http://127.0.0.1:{_free_port()}")
    with pytest.raises(
        LLMConfigError, match=r"llm.providers.p: endpoint http://127.0.0.1:\d+/v1 is unreachable"
    ):
        validate_llm_config(cfg, ENV, connect_timeout_s=1.0)


def test_capability_limits(fake: FakeLLMServer) -> None:
    from engine.llm import Capabilities

    cfg = make_cfg("anthropic", fake.url, caps=Capabilities(vision=False, max_output_tokens=100))
    with pytest.raises(LLMConfigError) as err:
        validate_llm_config(cfg, ENV)
    assert "llm.roles.vision: model 'm' has no vision capability" in str(err.value)
    assert "max_tokens 256 exceeds model 'm''s output limit of 100" in str(err.value)


def test_take_api_keys_removes_them_from_the_environment(fake: FakeLLMServer) -> None:
    environ = {TEST_KEY_ENV: TEST_KEY, "PATH": "/bin"}
    keys = take_api_keys(make_cfg("anthropic", fake.url), environ)
    assert keys == {"p": TEST_KEY} and environ == {"PATH": "/bin"}
