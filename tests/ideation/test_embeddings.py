"""`silva ideate` with an `embedding` role: duplicates are judged on the gateway's embeddings (an
OpenAI-compatible endpoint, the fake server on 127.0.0.1), each text paid for once."""

from __future__ import annotations

from pathlib import Path

from engine.llm.ledger import read_records
from silva.cli.main import main
from silva.ideation.archive import read_archive
from tests.ideation.fake_literature import fake_literature
from tests.ideation.test_ideate import write_topic
from tests.llm.fake_servers import FakeLLMServer


def test_duplicates_judged_by_gateway_embeddings(tmp_path: Path) -> None:
    with fake_literature() as (url, _), FakeLLMServer() as server:
        llm = {
            "providers": {
                "offline": {"kind": "scripted"},
                "local": {
                    "kind": "openai_compatible",
                    "base_url": server.url + "/v1",
                    "backoff_base_s": 0.01,
                },
            },
            "models": {
                "thinker": {
                    "provider": "offline",
                    "model": "scripted-thinker",
                    "price": {"input": 1.0, "output": 2.0},
                },
                "embedder": {
                    "provider": "local",
                    "model": "fake-embed",
                    "price": {"input": 0.02, "output": 0},
                    "capabilities": {"embeddings": True, "chat": False},
                },
            },
            "roles": {
                "ideation": {"model": "thinker", "max_tokens": 4096},
                "embedding": {"model": "embedder"},
            },
        }
        # The fake's vectors are hash bytes (cosines of unrelated texts near 0.75): only twins reach 0.99.
        topic = write_topic(tmp_path, url, llm=llm, max_similarity=0.99)
        assert main(["ideate", str(topic), "--out", str(tmp_path / "ideas")]) == 0
    records = read_archive(tmp_path / "ideas" / "ideas.jsonl")
    assert [r.status for r in records] == ["novel", "not_novel", "duplicate", "novel"]
    dup = next(r for r in records if r.status == "duplicate")
    assert dup.duplicate_of == "smooth_asym" and dup.novelty.reason.startswith("embedding similarity 1.00")
    # Idea 1 had nothing to compare; idea 2 embedded itself and idea 1; idea 3 (idea 1's twin) was
    # all in the cache; idea 4 paid for its own text only.
    sent = [r.body["input"] for r in server.embedding_requests]
    assert [len(batch) for batch in sent] == [2, 1]
    embedding = [r for r in read_records(tmp_path / "ideas" / "llm_ledger.jsonl") if r.role == "embedding"]
    assert sum(not r.cache_hit for r in embedding) == 2 and any(r.cache_hit for r in embedding)
    assert all(r.model == "fake-embed" and r.error is None for r in embedding)
