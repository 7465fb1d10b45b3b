"""The start-of-run probe against fake servers: a role that cannot finish in time, or that the
served context cannot hold, is refused before any work with the numbers and the setting to change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.llm import Capabilities, LLMConfig, LLMConfigError, Price, validate_llm_config
from engine.llm.ledger import LEDGER_FILE, CallRecord, Ledger, read_records
from engine.llm.probe import PROBE_ROLE, PROBE_SAMPLES, PROBE_TOKENS
from silva.cli.main import main
from silva.llm_session import answered, probe_llm
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import PRICE, TEST_KEY, TEST_KEY_ENV, make_cfg
from tests.search.agentic_helpers import LLM as SCRIPTED_LLM
from tests.search.agentic_helpers import agentic_config, responder, start

ENV = {TEST_KEY_ENV: TEST_KEY}


def test_a_role_that_cannot_finish_in_time_is_refused(fake: FakeLLMServer) -> None:
    """32 tokens in at least 0.5 s: at most 64 tokens/s, so 4096 tokens need over 60 s, more than
    the 5 s timeout; 64 tokens need about a second and pass."""
    fake.default = Reply.ok("1 2 3", delay_s=0.5, usage=(20, PROBE_TOKENS, 0))
    roles = {
        "code": {"model": "m", "max_tokens": 4096},
        "feedback": {"model": "m", "max_tokens": 64},
    }
    cfg = make_cfg("openai_compatible", fake.url, roles=roles)
    with pytest.raises(LLMConfigError) as err:
        validate_llm_config(cfg, ENV)
    message = str(err.value)
    assert "llm.roles.code: max_tokens 4096 at the" in message and "tokens/s measured on p/m" in message
    assert "more than llm.providers.p.timeout_s (5 s)" in message
    assert (
        "lower llm.roles.code.max_tokens to at most" in message
        and "raise llm.providers.p.timeout_s" in message
    )
    assert "llm.roles.feedback" not in message
    assert len(fake.requests) == PROBE_SAMPLES  # samples of one model, nothing else


def test_the_served_context_is_read_and_checked(fake: FakeLLMServer) -> None:
    fake.pages["/props"] = {"default_generation_settings": {"n_ctx": 2048}}
    fake.default = Reply.ok("1 2 3", usage=(20, PROBE_TOKENS, 0))
    roles = {"code": {"model": "m", "max_tokens": 1500}, "feedback": {"model": "m", "max_tokens": 256}}
    cfg = make_cfg("openai_compatible", fake.url, roles=roles)
    with pytest.raises(LLMConfigError) as err:
        validate_llm_config(cfg, ENV)
    message = str(err.value)
    # The check the config's context gets (prompt_budget.too_small), on the served context.
    assert "llm.roles.code: the 2048-token context that http://" in message
    assert "/props n_ctx reports less max_tokens 1500 leaves ~500 tokens for the prompt" in message
    assert "the code steps need at least 1000: lower max_tokens to at most 1000 or serve the model" in message
    assert "llm.roles.feedback" not in message
    assert "llm.models.m: capabilities.context_tokens is 128000" in message
    assert "set llm.models.m.capabilities.context_tokens to 2048" in message


def test_vllm_max_model_len_and_a_config_that_fits(
    fake: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.pages["/v1/models"] = {"data": [{"id": "fake-model", "max_model_len": 32768}]}
    fake.default = Reply.ok("1 2 3", usage=(20, PROBE_TOKENS, 0))
    cfg = make_cfg("openai_compatible", fake.url, caps=Capabilities(vision=True, context_tokens=32768))
    (result,) = validate_llm_config(cfg, ENV)
    assert result.context_tokens == 32768 and (result.context_source or "").endswith(
        "/v1/models max_model_len"
    )
    assert result.output_tokens == PROBE_TOKENS and result.tokens_per_s is not None and result.dollars > 0
    assert "context 32768 tokens" in result.line() and "tokens/s" in result.line()


def test_a_failed_probe_is_reported_not_refused(fake: FakeLLMServer) -> None:
    fake.default = Reply.error(500)
    (result,) = validate_llm_config(make_cfg("openai_compatible", fake.url), ENV)
    assert result.error and "failed" in result.line()


def test_probe_off(fake: FakeLLMServer) -> None:
    cfg = make_cfg("openai_compatible", fake.url).model_copy(update={"probe": False})
    assert validate_llm_config(cfg, ENV) == [] and not fake.requests


@pytest.mark.e2e
def test_the_probe_is_paid_into_the_run_ledger(
    fake: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose `writeup` role maps to a model on the fake server (no writeup phase: the probe
    is its only call there): the probe's call is a `probe` row of the run's ledger, priced, and
    `silva cost` lists the role."""
    monkeypatch.setenv(TEST_KEY_ENV, TEST_KEY)
    fake.default = Reply.ok("1 2 3", usage=(20, PROBE_TOKENS, 0))
    served = make_cfg(
        "openai_compatible", fake.url, timeout_s=60.0
    )  # one sample is fast enough, however loaded
    llm = {
        **SCRIPTED_LLM,
        "providers": {**SCRIPTED_LLM["providers"], **served.model_dump(mode="json")["providers"]},
        "models": {**SCRIPTED_LLM["models"], **served.model_dump(mode="json")["models"]},
        "roles": {**SCRIPTED_LLM["roles"], "writeup": {"model": "m", "max_tokens": 256}},
    }
    stages = {s: {"max_nodes": 1} for s in ("preliminary", "hyperparameter", "agenda", "ablation")}
    cfg = agentic_config(tmp_path, llm=llm, stages=stages, replicates=1)
    outcome, journal = start(cfg, responder())
    assert outcome.status == "finished", outcome
    run_dir = journal.log.path.parent
    (probe,) = [r for r in read_records(run_dir / LEDGER_FILE) if r.role == PROBE_ROLE]
    assert (probe.provider, probe.model, probe.attempts, probe.error) == ("p", "fake-model", 1, None)
    assert (probe.input_tokens, probe.output_tokens) == (20, PROBE_TOKENS) and probe.wall_s > 0
    assert probe.dollars == pytest.approx(PRICE.dollars(20, PROBE_TOKENS, 0))
    assert len(fake.requests) == 1  # the probe; the run's own calls went to the scripted model
    capsys.readouterr()
    assert main(["cost", str(run_dir)]) == 0
    assert re.search(r"│ probe\s*│\s*1 │", capsys.readouterr().out)  # the `by role` table


def test_one_slow_sample_does_not_refuse(fake: FakeLLMServer) -> None:
    """A stall of the server: 32 tokens in 1 s (32 tokens/s) cannot write 1,024 tokens in 30 s;
    the next sample, answered at once, can. The fastest sample is judged, and both are paid."""
    fake.script(Reply.ok("1 2 3", delay_s=1.0, usage=(20, PROBE_TOKENS, 0)))
    fake.default = Reply.ok("1 2 3", usage=(20, PROBE_TOKENS, 0))
    cfg = make_cfg(
        "openai_compatible", fake.url, timeout_s=30.0, roles={"code": {"model": "m", "max_tokens": 1024}}
    )
    (result,) = validate_llm_config(cfg, ENV)
    assert len(fake.requests) == 2 and len(result.others) == 1
    assert result.tokens_per_s is not None and result.tokens_per_s > result.others[0].tokens_per_s  # type: ignore[operator]
    assert "(fastest of 2 samples)" in result.line()
    assert [r.role for r in result.records()] == [PROBE_ROLE, PROBE_ROLE]


def test_a_slow_model_is_refused_after_its_samples_but_a_resume_is_warned(fake: FakeLLMServer) -> None:
    fake.default = Reply.ok("1 2 3", delay_s=0.5, usage=(20, PROBE_TOKENS, 0))
    cfg = make_cfg(
        "openai_compatible", fake.url, timeout_s=30.0, roles={"code": {"model": "m", "max_tokens": 4096}}
    )
    with pytest.raises(LLMConfigError, match=r"fastest of 3 samples\) takes about"):
        validate_llm_config(cfg, ENV)
    assert len(fake.requests) == PROBE_SAMPLES
    (result,) = validate_llm_config(cfg, ENV, worked={"p/fake-model"})  # a run that has used it
    (warning,) = result.warnings
    assert "llm.roles.code: max_tokens 4096" in warning and "not refused" in warning
    assert "warning: llm.roles.code" in result.line()


def test_a_resume_reads_from_its_ledger_which_models_have_answered(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE)
    ledger.append(CallRecord(role="code", provider="p", model="fake-model", attempts=1, output_tokens=9))
    ledger.append(CallRecord(role="code", provider="q", model="other", attempts=1, error="timed out"))
    ledger.append(CallRecord(role="code", provider="r", model="cached", output_tokens=9, cache_hit=True))
    assert answered(read_records(tmp_path / LEDGER_FILE)) == {"p/fake-model"}


def test_a_command_prints_and_records_its_probe(
    fake: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `silva ideate` and `silva review` call before their work (silva/llm_session.py)."""
    monkeypatch.setenv(TEST_KEY_ENV, TEST_KEY)
    fake.default = Reply.ok("1 2 3", usage=(20, PROBE_TOKENS, 0))
    (result,) = probe_llm(make_cfg("openai_compatible", fake.url), tmp_path / "ideas")
    assert result.line() in capsys.readouterr().out
    (row,) = read_records(tmp_path / "ideas" / LEDGER_FILE)
    assert (row.role, row.output_tokens, row.dollars) == (PROBE_ROLE, PROBE_TOKENS, result.dollars)


def test_a_zero_price_for_a_hosted_model_the_table_prices_is_refused() -> None:
    """The local example switched to Anthropic by editing provider and model, keeping price 0."""
    cfg = LLMConfig.model_validate(
        {
            "providers": {"anthropic": {"kind": "anthropic", "api_key_env": TEST_KEY_ENV}},
            "models": {
                "smol": {
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "price": {"input": 0, "output": 0},
                }
            },
            "roles": {"code": {"model": "smol"}},
        }
    )
    with pytest.raises(LLMConfigError) as err:
        validate_llm_config(cfg, ENV, check_endpoints=False)
    (line,) = [ln for ln in str(err.value).splitlines() if "llm.models.smol" in ln]
    assert "price 0 for claude-sonnet-4-5 on anthropic, which lists $3/$15 per million tokens" in line
    assert "set price.free: true" in line
    cfg.models["smol"].price = Price(input=0, output=0, free=True)  # said explicitly: accepted
    assert validate_llm_config(cfg, ENV, check_endpoints=False) == []
