"""Discovery's embeddings: through the LLM gateway when an `embedding` role is configured (seed
novelty on workers, bank pruning on the driver), offline TF-IDF otherwise, TF-IDF again when the
gateway's call fails for good, and a spent budget still stops the run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from engine import events as ev
from engine.llm import BudgetExceeded, Capabilities, LLMConfig, Price, build_gateway, summarize
from engine.llm.ledger import LEDGER_FILE, read_records
from engine.llm.providers.scripted import ScriptedProvider
from search.discovery.bank import GatewayEmbedder, TfidfEmbedder, make_embedder, novelty, prune_max_min
from search.discovery.policies import ExperiGen
from tests.discovery.test_runs import data, events, run, write_config  # noqa: F401 (data is a fixture)
from tests.llm.conftest import fake  # noqa: F401 (the fake OpenAI server fixture)
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import gateway_for, make_cfg

EMBEDDER = {
    "provider": "offline",
    "model": "scripted-embed",
    "capabilities": {"embeddings": True, "chat": False},
}


@pytest.mark.e2e
def test_experigen_embeds_through_the_gateway(tmp_path: Path, data: Path) -> None:  # noqa: F811
    path = write_config(tmp_path, data, mode="experigen", max_chains=2, chain_steps=2, bank_capacity=1)
    cfg = yaml.safe_load(path.read_text())
    cfg["llm"]["models"]["embedder"] = EMBEDDER
    cfg["llm"]["roles"]["embedding"] = {"model": "embedder"}
    path.write_text(yaml.safe_dump(cfg))
    run_dir, journal, provider = run(path)

    proposing = {n.id for n in journal if n.kind in ("seed", "refine")}
    records = [r for r in read_records(run_dir / LEDGER_FILE) if r.role == "embedding"]
    assert records and all(r.error is None and r.model == "scripted-embed" for r in records)
    # Every ExperiGen proposal embedded its claim (novelty against the bank, the bank's pruning).
    assert {r.node_id for r in records} == proposing and len(provider.embed_calls) >= len(proposing)
    assert not any(b.embedding_fallback for b in events(journal, ev.BankUpdated))
    for n in journal:
        if n.kind in ("seed", "refine"):
            assert n.outcome.embedding_fallback == ""  # type: ignore[union-attr]
    assert summarize(run_dir)["by_role"]["embedding"]["calls"] == len(records)


def test_bank_pruning_on_the_driver_uses_the_gateway(tmp_path: Path) -> None:
    cfg = LLMConfig.model_validate(
        {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {"embedder": EMBEDDER},
            "roles": {"embedding": {"model": "embedder"}},
        }
    )
    provider = ScriptedProvider("offline")
    gw = build_gateway(cfg, tmp_path, None, {}, providers={"offline": provider})
    claims = {
        "a": "smoking raises blood pressure",
        "b": "smoking raises blood pressure in men",
        "c": "rainfall lowers crop yield",
    }
    recorded: list[ev.Event] = []
    strategy = SimpleNamespace(
        dcfg=SimpleNamespace(bank_capacity=2),
        state=SimpleNamespace(
            bank=lambda: ["a", "b"],
            records={
                k: SimpleNamespace(hypothesis=SimpleNamespace(statement=v, variables=["x"]))
                for k, v in claims.items()
            },
        ),
        embedder=lambda node_id: make_embedder(gw.client(), True, node_id=node_id, in_driver=True),
        record=recorded.append,
    )
    try:
        ExperiGen(strategy)._enter_bank("c")  # type: ignore[arg-type]
    finally:
        gw.close()
    # The newest claim stays; of the two near-duplicates, one is pruned for diversity.
    (event,) = recorded
    assert isinstance(event, ev.BankUpdated)
    assert "c" in event.bank and len(event.bank) == 2 and event.pruned in (["a"], ["b"])
    assert len(provider.embed_calls) == 1
    assert event.embedding_fallback is None
    assert [r.node_id for r in read_records(tmp_path / LEDGER_FILE)] == ["c"]


@pytest.mark.e2e
def test_without_an_embedding_role_tfidf_is_used(tmp_path: Path, data: Path) -> None:  # noqa: F811
    path = write_config(tmp_path, data, mode="experigen", max_chains=1, chain_steps=1, bank_capacity=1)
    run_dir, journal, provider = run(path)
    assert provider.embed_calls == [] and not any(
        r.role == "embedding" for r in read_records(run_dir / LEDGER_FILE)
    )
    # TF-IDF by choice, not as the fallback of a refused gateway call.
    assert all(n.outcome.embedding_fallback == "" for n in journal if n.kind == "seed")  # type: ignore[union-attr]
    assert isinstance(make_embedder(None, True), TfidfEmbedder)


def test_gateway_embedder_prunes_with_the_servers_vectors(fake: FakeLLMServer, tmp_path: Path) -> None:  # noqa: F811
    cfg = make_cfg(
        "openai",
        fake.url,
        caps=Capabilities(chat=False, embeddings=True),
        price=Price(input=1, output=0),
        roles={"embedding": {"model": "m"}},
        max_retries=0,
    )
    gw = gateway_for(cfg, tmp_path, dollars=1.0)
    try:
        embedder = make_embedder(gw.client(), True, node_id="n1")
        assert isinstance(embedder, GatewayEmbedder)
        texts = ["a b", "c d", "e f", "g h"]
        kept = prune_max_min(["1", "2", "3", "4"], texts, 2, embedder, keep_first="3")
        assert "3" in kept and len(kept) == 2 and len(fake.embedding_requests) == 1
        assert novelty(["x"], texts, embedder)[0] > 0
        assert [r.body["input"] for r in fake.embedding_requests] == [
            texts,
            ["x"],
        ]  # the bank came from the cache
        fake.script(Reply.error(500))  # fails for good (no retries): TF-IDF answers, and says why
        vecs = embedder.embed(["fresh text", "another text"])
        assert vecs.shape[0] == 2 and "TF-IDF used" in embedder.fallback and "HTTP 500" in embedder.fallback
    finally:
        gw.close()
    spent = gateway_for(cfg, tmp_path / "spent", dollars=0.0)
    try:
        with pytest.raises(BudgetExceeded):  # in a job: the run stops cleanly
            make_embedder(spent.client(), True).embed(["y"])
        on_driver = make_embedder(spent.client(), True, in_driver=True)  # no job to hand the refusal back
        assert on_driver.embed(["y", "z"]).shape[0] == 2 and "budget" in on_driver.fallback  # type: ignore[union-attr]
    finally:
        spent.close()
