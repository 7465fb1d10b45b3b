"""The gateway actor on Ray: workers get completions, never keys."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.llm import LLM, BudgetExceeded, summarize, take_api_keys
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import TEST_KEY, TEST_KEY_ENV, make_cfg

pytestmark = [pytest.mark.ray, pytest.mark.e2e]  # each test goes through a Ray cluster


def kill_gateway(llm: LLM) -> None:
    import ray

    from actors.gateway import ActorTransport

    assert isinstance(llm.transport, ActorTransport)
    ray.kill(llm.transport.handle)


def test_workers_call_the_actor_without_seeing_keys(
    fake: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setenv(TEST_KEY_ENV, TEST_KEY)
    cfg = make_cfg("anthropic", fake.url)
    keys = take_api_keys(cfg, os.environ)  # before the cluster starts, as the driver must
    assert TEST_KEY_ENV not in os.environ
    request.getfixturevalue("ray_cluster")
    import ray

    from actors.gateway import start_gateway_actor

    fake.handler = lambda rec: Reply.ok(f"answer to {rec.body['messages'][0]['content'][0]['text']}")

    # Nested, so Ray ships it by value rather than importing this test module on the worker.
    def worker_call(llm: LLM, prompt: str) -> tuple[str, list[str]]:
        out = llm.complete(prompt, role="code", node_id=prompt)
        return out.text, list(os.environ.values())

    llm = start_gateway_actor(cfg, tmp_path, None, keys=keys)
    task = ray.remote(num_cpus=0.1)(worker_call)
    try:
        results = ray.get([task.remote(llm, f"q{i}") for i in range(6)], timeout=60)
    finally:
        kill_gateway(llm)
    assert sorted(text for text, _ in results) == [f"answer to q{i}" for i in range(6)]
    for _, env_values in results:
        assert TEST_KEY not in env_values  # no variable of the worker holds the key
    assert {r.headers["authorization"] for r in fake.requests} == {f"Bearer {TEST_KEY}"}  # the gateway had it
    assert summarize(tmp_path)["run"]["calls"] == 6


def test_budget_stop_reaches_workers_as_budget_exceeded(
    fake: FakeLLMServer, tmp_path: Path, ray_cluster: None
) -> None:
    import ray

    from actors.gateway import start_gateway_actor

    def worker_budget(llm: LLM) -> str:
        try:
            llm.complete("anything", role="code")
        except BudgetExceeded as exc:  # arrives as our own error, not wrapped by Ray
            return str(exc)
        return "no error"

    llm = start_gateway_actor(make_cfg("anthropic", fake.url), tmp_path, 0.0, keys={"p": TEST_KEY})
    try:
        message = ray.get(ray.remote(num_cpus=0.1)(worker_budget).remote(llm), timeout=60)
    finally:
        kill_gateway(llm)
    assert "budget of $0.00 is spent" in message
    assert fake.requests == []


def test_embeddings_go_through_the_actor(fake: FakeLLMServer, tmp_path: Path, ray_cluster: None) -> None:
    import ray

    from actors.gateway import start_gateway_actor
    from engine.llm import Capabilities, Price
    from tests.llm.fake_servers import fake_vector

    def worker_embed(llm: LLM, texts: list[str]) -> list[list[float]]:
        return llm.embed(texts, node_id="n1")

    cfg = make_cfg(
        "openai",
        fake.url,
        caps=Capabilities(chat=False, embeddings=True),
        price=Price(input=1.0, output=0.0),
        roles={"embedding": {"model": "m"}},
    )
    llm = start_gateway_actor(cfg, tmp_path, None, keys={"p": TEST_KEY})
    try:
        vectors = ray.get(ray.remote(num_cpus=0.1)(worker_embed).remote(llm, ["a", "b"]), timeout=60)
    finally:
        kill_gateway(llm)
    assert vectors == [fake_vector("a"), fake_vector("b")]
    assert [r.body["input"] for r in fake.requests] == [["a", "b"]]
    assert summarize(tmp_path)["by_role"]["embedding"]["calls"] == 1


def test_a_chain_that_gives_up_in_a_worker_is_one_ledger_line(
    fake: FakeLLMServer, tmp_path: Path, ray_cluster: None
) -> None:
    import ray

    from actors.gateway import start_gateway_actor
    from engine.llm import StructuredOutputError
    from engine.llm.ledger import LEDGER_FILE, read_records

    def worker_structured(llm: LLM) -> str:
        from engine.llm.types import Usage  # any model: the answer is no JSON at all

        try:
            llm.complete("token counts, please", role="code", output_type=Usage, node_id="n1")
        except StructuredOutputError as exc:
            return str(exc)
        return "validated"

    fake.default = Reply.ok("not JSON at all")
    llm = start_gateway_actor(make_cfg("openai", fake.url), tmp_path, None, keys={"p": TEST_KEY})
    try:
        message = ray.get(ray.remote(num_cpus=0.1)(worker_structured).remote(llm), timeout=60)
    finally:
        kill_gateway(llm)
    assert "did not validate as Usage after 3 tries" in message
    rows = read_records(tmp_path / LEDGER_FILE)
    assert [r.cause for r in rows] == [None, None, None, "invalid"] and len(fake.requests) == 3
    assert rows[-1].error == message and rows[-1].chain == rows[0].chain
