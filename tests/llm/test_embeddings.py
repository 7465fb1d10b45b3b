"""Embeddings through the gateway and the real `openai` SDK against the fake server's
`/v1/embeddings`: order, faults, budget, ledger, per-text cache, and the refusals at config time."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.llm import (
    BudgetExceeded,
    CacheMiss,
    Capabilities,
    LLMCallError,
    LLMConfig,
    LLMConfigError,
    Price,
    build_gateway,
    summarize,
    validate_llm_config,
)
from engine.llm.ledger import LEDGER_FILE, read_records
from engine.llm.providers.scripted import ScriptedProvider
from tests.llm.fake_servers import FakeLLMServer, Reply, fake_vector
from tests.llm.support import TEST_KEY, TEST_KEY_ENV, gateway_for, make_cfg

EMBEDDER = Capabilities(chat=False, embeddings=True, temperature=False, context_tokens=8192)
PRICE = Price(input=2.0, output=0.0)  # $2 per Mtok: 1000 tokens cost $0.002
ROLES = {"embedding": {"model": "m"}}


def embed_cfg(url: str, kind: str = "openai", **provider: object) -> LLMConfig:
    return make_cfg(kind, url, caps=EMBEDDER, price=PRICE, roles=ROLES, **provider)


@pytest.mark.parametrize("kind", ["openai", "openai_compatible"])
def test_vectors_come_back_in_order(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    texts = ["alpha beta", "gamma", "delta epsilon zeta"]
    gw = gateway_for(embed_cfg(fake.url, kind), tmp_path)
    try:
        vectors = gw.client().embed(texts, node_id="n1", stage="s", idea="i")
    finally:
        gw.close()
    # The fake answers the items reversed, each with its index: order comes from `index`.
    assert vectors == [fake_vector(t) for t in texts]
    (req,) = fake.embedding_requests
    assert req.body["input"] == texts and req.body["model"] == "fake-model"
    assert req.body["encoding_format"] == "float" and "dimensions" not in req.body
    assert req.headers["authorization"] == f"Bearer {TEST_KEY}"


def test_dimensions_are_asked_for(fake: FakeLLMServer, tmp_path: Path) -> None:
    cfg = make_cfg(
        "openai", fake.url, caps=EMBEDDER, price=PRICE, roles={"embedding": {"model": "m", "dimensions": 16}}
    )
    gw = gateway_for(cfg, tmp_path)
    try:
        (vector,) = gw.client().embed(["one"])
    finally:
        gw.close()
    assert fake.embedding_requests[0].body["dimensions"] == 16 and len(vector) == 16


def test_429_with_retry_after_is_retried(fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.error(429, retry_after="0.4"))
    gw = gateway_for(embed_cfg(fake.url), tmp_path)
    try:
        start = time.monotonic()
        vectors = gw.client().embed(["a", "b"])
        elapsed = time.monotonic() - start
    finally:
        gw.close()
    assert vectors == [fake_vector("a"), fake_vector("b")]
    assert elapsed >= 0.4 and len(fake.embedding_requests) == 2  # backoff_base_s is 0.01
    (record,) = read_records(tmp_path / LEDGER_FILE)
    assert record.retries == 1 and record.error is None


def test_500_then_success(fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.error(500))
    gw = gateway_for(embed_cfg(fake.url), tmp_path)
    try:
        assert gw.client().embed(["x"]) == [fake_vector("x")]
    finally:
        gw.close()
    assert len(fake.embedding_requests) == 2


def test_timeout_then_success(fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.ok("", delay_s=1.5))
    gw = gateway_for(embed_cfg(fake.url, timeout_s=0.5), tmp_path)
    try:
        assert gw.client().embed(["x"]) == [fake_vector("x")]
    finally:
        gw.close()
    # The slow answer was abandoned at the deadline and the call sent again, not waited out.
    assert len(fake.embedding_requests) == 2


def test_malformed_bodies_fail_clearly(fake: FakeLLMServer, tmp_path: Path) -> None:
    gw = gateway_for(embed_cfg(fake.url, max_retries=1), tmp_path)
    llm = gw.client()
    try:
        fake.script(Reply.malformed(), Reply.malformed())  # not JSON at all
        with pytest.raises(LLMCallError, match="after 2 attempts.*malformed response body"):
            llm.embed(["x"])
        short = {
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [0.1]}],
            "model": "fake-model",
            "usage": {"prompt_tokens": 3, "total_tokens": 3},
        }
        fake.script(Reply.json(short), Reply.json(short))  # JSON, one vector for two texts
        with pytest.raises(LLMCallError, match="malformed embeddings response: expected 2 vectors, got 1"):
            llm.embed(["x", "y"])
        fake.script(Reply.malformed())  # a glitch once, then a good body: retried
        assert llm.embed(["z"]) == [fake_vector("z")]
    finally:
        gw.close()
    errors = [r.error for r in read_records(tmp_path / LEDGER_FILE) if r.error]
    assert len(errors) == 2 and all(r.role == "embedding" for r in read_records(tmp_path / LEDGER_FILE))


def test_budget_refuses_before_the_call(fake: FakeLLMServer, tmp_path: Path) -> None:
    gw = gateway_for(embed_cfg(fake.url), tmp_path, dollars=0.0)
    try:
        with pytest.raises(BudgetExceeded, match=r"budget of \$0.00 is spent.*embedding call"):
            gw.client().embed(["x"])
    finally:
        gw.close()
    assert fake.embedding_requests == []
    assert summarize(tmp_path)["run"]["budget_stops"] == 1


def test_ledger_accounts_tokens_and_dollars(fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.default = Reply.ok("", usage=(1000, 0, 0))
    gw = gateway_for(embed_cfg(fake.url), tmp_path, dollars=1.0)
    try:
        gw.client().embed(["a", "b"], node_id="n1", stage="ideation", idea="i1")
        gw.client().embed(["c"], node_id="n2")
        assert gw.spent() == pytest.approx(0.004)
    finally:
        gw.close()
    s = summarize(tmp_path)
    assert s["run"]["calls"] == 2 and s["run"]["input_tokens"] == 2000 and s["run"]["output_tokens"] == 0
    assert s["run"]["dollars"] == pytest.approx(0.004)
    assert s["by_role"]["embedding"]["dollars"] == pytest.approx(0.004)
    assert s["by_node"]["n1"]["calls"] == 1 and s["by_stage"]["ideation"]["calls"] == 1
    assert s["by_model"]["p/fake-model"]["input_tokens"] == 2000


def test_cache_hit_on_repeat_pays_only_new_texts(fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.default = Reply.ok("", usage=(1000, 0, 0))
    cfg = embed_cfg(fake.url)
    first = gateway_for(cfg, tmp_path)
    try:
        original = first.client().embed(["a", "b"])
    finally:
        first.close()
    resumed = gateway_for(cfg, tmp_path)  # a resumed run: a new gateway on the same run directory
    try:
        assert resumed.client().embed(["b", "a"], node_id="other") == [original[1], original[0]]
        assert len(fake.embedding_requests) == 1  # answered from disk, whatever the node
        grown = resumed.client().embed(["a", "b", "c", "c"])  # a repeated text is sent once
    finally:
        resumed.close()
    assert grown[:2] == original and grown[2] == grown[3] == fake_vector("c")
    assert [r.body["input"] for r in fake.embedding_requests] == [["a", "b"], ["c"]]
    records = read_records(tmp_path / LEDGER_FILE)
    assert [(r.cache_hit, r.dollars) for r in records] == [
        (False, pytest.approx(0.002)),
        (True, 0.0),
        (True, 0.0),
        (False, pytest.approx(0.002)),
    ]
    assert records[1].input_tokens == 1000  # the hit records the tokens it saved
    assert summarize(tmp_path)["run"]["cache_hits"] == 2


def test_replay_mode_refuses_new_texts(fake: FakeLLMServer, tmp_path: Path) -> None:
    cfg = embed_cfg(fake.url)
    gw = gateway_for(cfg, tmp_path)
    try:
        gw.client().embed(["seen"])
    finally:
        gw.close()
    replay = gateway_for(
        cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"mode": "replay"})}), tmp_path
    )
    try:
        assert replay.client().embed(["seen"]) == [fake_vector("seen")]
        with pytest.raises(CacheMiss, match="1 text"):
            replay.client().embed(["seen", "new"])
    finally:
        replay.close()
    assert len(fake.embedding_requests) == 1


def test_bad_input_refused_before_any_request(fake: FakeLLMServer, tmp_path: Path) -> None:
    gw = gateway_for(embed_cfg(fake.url), tmp_path)
    llm = gw.client()
    try:
        assert llm.embed([]) == []
        with pytest.raises(LLMCallError, match="text 1 is empty"):
            llm.embed(["x", "  "])
        with pytest.raises(TypeError, match="sequence of texts"):
            llm.embed("one string")
        with pytest.raises(LLMConfigError, match="no model configured for LLM role 'code'"):
            llm.embed(["x"], role="code")
    finally:
        gw.close()
    assert fake.requests == []


def test_anthropic_refused_at_validation_and_at_call(fake: FakeLLMServer, tmp_path: Path) -> None:
    cfg = make_cfg("anthropic", fake.url, caps=EMBEDDER, price=PRICE, roles=ROLES)
    with pytest.raises(
        LLMConfigError, match="llm.roles.embedding: .*kind anthropic, which has no embeddings API"
    ):
        validate_llm_config(cfg, {TEST_KEY_ENV: TEST_KEY})
    gw = gateway_for(cfg, tmp_path)
    try:
        with pytest.raises(LLMConfigError, match="has no embeddings API"):
            gw.client().embed(["x"])
    finally:
        gw.close()
    assert fake.requests == []


def test_capabilities_decide_who_embeds_and_who_chats(fake: FakeLLMServer) -> None:
    env = {TEST_KEY_ENV: TEST_KEY}
    chat_model = make_cfg("openai", fake.url, roles={"embedding": {"model": "m"}, "code": {"model": "m"}})
    with pytest.raises(
        LLMConfigError, match=r"llm.roles.embedding: model 'm' \(fake-model\) cannot embed"
    ) as err:
        validate_llm_config(chat_model, env)
    assert "llm.roles.code" not in str(err.value)
    embedder = make_cfg(
        "openai", fake.url, caps=EMBEDDER, price=PRICE, roles={"code": {"model": "m", "dimensions": 8}}
    )
    with pytest.raises(LLMConfigError) as err:
        validate_llm_config(embedder, env)
    assert "llm.roles.code: model 'm' (fake-model) is an embedding model" in str(err.value)
    assert "llm.roles.code: dimensions applies to the embedding role only" in str(err.value)
    # The default table knows OpenAI's embedding models: capabilities and price need no config.
    table = LLMConfig.model_validate(
        {
            "providers": {"o": {"kind": "openai", "api_key_env": TEST_KEY_ENV, "base_url": fake.url + "/v1"}},
            "models": {"emb": {"provider": "o", "model": "text-embedding-3-small"}},
            "roles": {"embedding": {"model": "emb"}},
        }
    )
    validate_llm_config(table, env)


def test_chat_call_on_an_embedding_model_is_refused(fake: FakeLLMServer, tmp_path: Path) -> None:
    gw = gateway_for(
        make_cfg("openai", fake.url, caps=EMBEDDER, price=PRICE, roles={"code": {"model": "m"}}), tmp_path
    )
    try:
        with pytest.raises(LLMConfigError, match="an embedding model"):
            gw.client().complete("hi", role="code")
    finally:
        gw.close()
    assert fake.requests == []


def test_scripted_embeddings_are_deterministic_offline(tmp_path: Path) -> None:
    cfg = LLMConfig.model_validate(
        {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {
                "toy": {"provider": "offline", "model": "toy-embed", "capabilities": {"embeddings": True}}
            },
            "roles": {"embedding": {"model": "toy"}},
        }
    )
    validate_llm_config(cfg, {})
    provider = ScriptedProvider("offline")
    texts = ["smoking raises blood pressure", "smoking raises pressure", "rainfall lowers crop yield"]
    gw = build_gateway(cfg, tmp_path, 1.0, {}, providers={"offline": provider})
    try:
        a = gw.client().embed(texts)
    finally:
        gw.close()
    b_gw = build_gateway(
        cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"mode": "off"})}),
        tmp_path / "other",
        None,
        {},
    )
    try:
        b = b_gw.client().embed(texts)
    finally:
        b_gw.close()
    assert a == b and len(a[0]) == 256  # the same vectors from a fresh provider in a fresh run
    cos = [sum(x * y for x, y in zip(a[0], v)) for v in a]
    assert cos[0] == pytest.approx(1.0) and cos[1] > 0.7 > 0.2 > cos[2]
    assert len(provider.embed_calls) == 1 and summarize(tmp_path)["by_role"]["embedding"]["input_tokens"] > 0
