"""Silva's real LLM paths against a real model (SmolLM2-135M-Instruct under llama.cpp's server,
configured as `openai_compatible`): structured output through `json_schema`, re-asks, embeddings,
the start-of-run probe, and `silva ideate`. Small `max_tokens` keep them quick on 2 cores."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, Field, field_validator

from engine.llm import LLMConfig, LLMConfigError, build_gateway, validate_llm_config
from engine.llm.ledger import LEDGER_FILE, read_records
from silva.cli.main import main
from silva.ideation.archive import read_archive
from tests.ideation.fake_literature import fake_literature
from tests.realmodel.conftest import llm_section
from tests.realmodel.llama_server import LocalServer

# Short fields: llama.cpp's grammar keeps the JSON within them, and a 135M model otherwise
# rambles in a string until max_tokens cuts the JSON. max_tokens leaves room for a field filled
# to its limit one character a token (96 tokens cut a 160-character summary in all 3 tries).
SUMMARY_CHARS = 80


class Verdict(BaseModel):
    buggy: bool
    summary: str = Field(max_length=SUMMARY_CHARS)


def gateway(server: LocalServer, run_dir: Path, **max_tokens: int):
    tokens = max_tokens or {"feedback": SUMMARY_CHARS + 48}
    cfg = LLMConfig.model_validate(llm_section(server.url, **tokens))
    return build_gateway(cfg, run_dir, None, {})


def test_structured_output_and_a_re_ask(local_model: LocalServer, tmp_path: Path) -> None:
    """Structured output through `json_schema`: the server's grammar holds the answer to the
    schema. The first answer is refused by the validator, whatever it is; the re-ask, carrying
    the validation error, goes to the real server and its answer is accepted."""
    seen: list[str] = []

    class Picky(Verdict):
        @field_validator("summary")
        @classmethod
        def not_the_first(cls, v: str) -> str:
            seen.append(v)
            if len(seen) == 1:
                raise ValueError("too vague: name the metric and its value")
            return v

    gw = gateway(local_model, tmp_path)
    try:
        out = gw.client().complete(
            "An experiment printed 'accuracy: 0.91' and exited 0. Was it buggy? Summarize in one sentence.",
            role="feedback",
            output_type=Picky,
        )
    finally:
        gw.close()
    # A 135M model's re-asked answer may fail again (too long), and be re-asked once more.
    assert isinstance(out, Picky) and len(seen) >= 2
    rows = read_records(tmp_path / LEDGER_FILE)
    assert len(rows) >= 2 and all(r.error is None for r in rows)  # a re-ask is its own accounted call
    assert all(r.attempts == 1 and r.output_tokens > 0 and r.input_tokens > 0 for r in rows)
    assert all(r.wall_s >= r.latency_s > 0 and r.dollars == 0.0 for r in rows)


def test_embeddings(local_model: LocalServer, tmp_path: Path) -> None:
    gw = gateway(local_model, tmp_path)
    try:
        vectors = gw.client().embed(["small-loss filtering", "label noise in logistic regression"])
    finally:
        gw.close()
    assert len(vectors) == 2 and len(vectors[0]) == len(vectors[1]) > 100
    assert all(math.isfinite(x) for v in vectors for x in v)
    (row,) = read_records(tmp_path / LEDGER_FILE)
    assert row.role == "embedding" and row.input_tokens > 0 and row.attempts == 1


def test_the_probe_measures_the_model_and_refuses_what_cannot_finish(local_model: LocalServer) -> None:
    cfg = LLMConfig.model_validate(llm_section(local_model.url, feedback=96))
    (result,) = validate_llm_config(cfg, {})
    assert result.error is None and result.context_tokens == 8192  # what /props says a slot holds
    assert result.tokens_per_s is not None and result.tokens_per_s > 0
    # 7000 tokens in 27 s would need over 259 tokens/s: more than 135M parameters on 2 cores give
    # (77-92 idle; the fastest of the probe's samples on a quiet machine passed 150, so 4096 tokens
    # refused nothing). Not a shorter timeout: at load 40-60 the 32-token probe itself took over
    # 10 s, timed out, and a probe without a speed refuses nothing.
    section = llm_section(local_model.url, timeout_s=27.0, code=7000)
    section["models"]["smol"]["capabilities"]["max_output_tokens"] = 7000
    slow = LLMConfig.model_validate(section)
    with pytest.raises(LLMConfigError, match=r"llm.roles.code: max_tokens 7000 at the .* tokens/s"):
        validate_llm_config(slow, {})


@pytest.mark.timeout(1800)  # a few minutes idle; a loaded host wrote 2-4 tokens/s
def test_silva_ideate(local_model: LocalServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with fake_literature() as (url, _):
        topic = {
            "topic": "Cheap defences of linear classifiers against label noise.",
            "num_ideas": 1,
            "metrics": [{"name": "accuracy", "direction": "maximize", "primary": True}],  # less to write
            "reflections": 0,
            "novelty_rounds": 1,
            "literature": {
                "provider": "semantic_scholar",
                "base_url": url,
                "requests_per_s": 100,
                "max_retries": 0,
            },
            # No re-ask: test_structured_output_and_a_re_ask covers it; here it doubled the minutes.
            "llm": {**llm_section(local_model.url, ideation=320), "max_reasks": 0},
        }
        path = tmp_path / "topic.yaml"
        path.write_text(yaml.safe_dump(topic))
        code = main(["ideate", str(path), "--out", str(tmp_path / "ideas")])
    out = capsys.readouterr().out
    records = (
        read_archive(tmp_path / "ideas" / "ideas.jsonl")
        if (tmp_path / "ideas" / "ideas.jsonl").exists()
        else []
    )
    assert "new ideas kept" in out
    # A small model may fail to write a valid idea: then it says so and exits 4, as a run without a result.
    assert (code, "not made" in out) == ((0, False) if records else (4, True)), out
    ledger = read_records(tmp_path / "ideas" / LEDGER_FILE)
    assert ledger and all(r.role in ("ideation", "embedding", "probe") for r in ledger)
    assert any(r.role == "probe" for r in ledger) and "probe local/smol" in out  # printed and paid
    assert len(records) <= 1  # one idea asked; a small model may fail to produce one, said in the output
