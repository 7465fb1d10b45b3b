"""Ledger totals, the dollar budget (sequential, concurrent, across resume) and the response cache."""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engine.llm import (
    BudgetExceeded,
    CacheMiss,
    LLMCallError,
    LLMConfig,
    Price,
    build_gateway,
    render_summary,
    summarize,
)
from engine.llm.ledger import LEDGER_FILE, read_records
from engine.llm.providers.scripted import ScriptedProvider
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import gateway_for, make_cfg

CALL_COST = (1000 * 3 + 200 * 15) / 1e6  # usage (1000 in, 200 out) at $3/$15 per Mtok


def test_totals_by_role_node_stage_idea(fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.default = Reply.ok("ok", usage=(1000, 200, 0))
    gw = gateway_for(make_cfg("anthropic", fake.url), tmp_path)
    llm = gw.client()
    try:
        llm.complete("a", role="code", node_id="n1", stage="preliminary", idea="i1")
        llm.complete("b", role="feedback", node_id="n1", stage="preliminary", idea="i1")
        llm.complete("c", role="code", node_id="n2", stage="ablation", idea="i2")
    finally:
        gw.close()
    s = summarize(tmp_path)
    assert s["run"]["calls"] == 3 and s["run"]["dollars"] == pytest.approx(3 * CALL_COST)
    assert s["run"]["input_tokens"] == 3000 and s["run"]["output_tokens"] == 600
    assert s["by_role"]["code"]["calls"] == 2 and s["by_role"]["feedback"]["calls"] == 1
    assert s["by_node"]["n1"]["dollars"] == pytest.approx(2 * CALL_COST)
    assert s["by_stage"]["ablation"]["calls"] == 1 and s["by_idea"]["i2"]["calls"] == 1
    assert "3 calls" in render_summary(s) and "code" in render_summary(s)


def test_ledger_tolerates_a_torn_last_line(fake: FakeLLMServer, tmp_path: Path) -> None:
    gw = gateway_for(make_cfg("openai", fake.url), tmp_path)
    try:
        gw.client().complete("a", role="code")
    finally:
        gw.close()
    with open(tmp_path / LEDGER_FILE, "a") as fh:
        fh.write('{"role": "code", "provider": "p", "mod')  # a crash mid-write
    assert len(read_records(tmp_path / LEDGER_FILE)) == 1
    assert summarize(tmp_path)["run"]["calls"] == 1


def test_budget_stops_the_run_and_survives_resume(fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.default = Reply.ok("ok", usage=(1000, 200, 0))
    cfg = make_cfg("anthropic", fake.url)
    budget = 0.02  # 3 calls leave $0.018 < budget, the 4th is admitted, the 5th refused
    gw = gateway_for(cfg, tmp_path, dollars=budget)
    llm = gw.client()
    paid = 0
    try:
        with pytest.raises(BudgetExceeded, match=r"budget of \$0.02 is spent.*budgets.dollars"):
            for i in range(10):
                llm.complete(f"q{i}", role="code")
                paid += 1
    finally:
        gw.close()
    assert paid == 4 and len(fake.requests) == 4
    spent = summarize(tmp_path)["run"]["dollars"]
    assert budget <= spent <= budget + CALL_COST
    assert summarize(tmp_path)["run"]["budget_stops"] == 1

    resumed = gateway_for(cfg, tmp_path, dollars=budget)  # a new session knows what was paid
    try:
        with pytest.raises(BudgetExceeded):
            resumed.client().complete("new question", role="code")
    finally:
        resumed.close()
    assert len(fake.requests) == 4


def test_budget_holds_under_concurrency(tmp_path: Path) -> None:
    cfg = LLMConfig.model_validate(
        {
            "providers": {"s": {"kind": "scripted"}},
            "models": {"m": {"provider": "s", "model": "toy", "price": {"input": 0, "output": 100}}},
            "roles": {"code": {"model": "m", "max_tokens": 256}},
        }
    )
    answer = "x" * 400  # 100 synthetic tokens: $0.01 a call
    provider = ScriptedProvider("s", fn=lambda call: answer, delay_s=0.05)
    gw = build_gateway(cfg, tmp_path, 0.1, {}, providers={"s": provider})
    llm, refused = gw.client(), threading.Event()

    def worker(i: int) -> None:
        for j in range(20):
            try:
                llm.complete(f"w{i} q{j}", role="code")
            except BudgetExceeded:
                refused.set()
                return

    try:
        with ThreadPoolExecutor(20) as pool:
            list(pool.map(worker, range(20)))
    finally:
        gw.close()
    assert refused.is_set()
    spent = summarize(tmp_path)["run"]["dollars"]
    assert 0.1 - 1e-9 <= spent <= 0.1 + 0.01 + 1e-9  # spent, yet never more than one call over


def test_cache_hits_on_resume_make_no_http_calls(fake: FakeLLMServer, tmp_path: Path) -> None:
    cfg = make_cfg("openai", fake.url)
    first = gateway_for(cfg, tmp_path)
    try:
        a = first.client().complete("question A", role="code", node_id="n1")
    finally:
        first.close()
    assert len(fake.requests) == 1 and not a.cache_hit

    second = gateway_for(cfg, tmp_path)  # the resumed run
    try:
        again = second.client().complete("question A", role="code", node_id="n1")
        assert len(fake.requests) == 1  # answered from disk
        assert again.cache_hit and again.dollars == 0 and again.text == a.text
        # The attempt counter a resume increments is not part of the identity: still no HTTP call.
        assert second.client().complete("question A", role="code", node_id="n1", attempt=2).cache_hit
        assert len(fake.requests) == 1
        # A deliberate retry is another node (a debug child) or another step: a fresh answer.
        assert not second.client().complete("question A", role="code", node_id="n2").cache_hit
        assert not second.client().complete("question A", role="feedback", node_id="n1").cache_hit
        assert len(fake.requests) == 3
    finally:
        second.close()
    run = summarize(tmp_path)["run"]
    assert run["cache_hits"] == 2 and run["dollars"] == pytest.approx(3 * a.dollars)


def test_replay_mode_answers_only_from_cache(fake: FakeLLMServer, tmp_path: Path) -> None:
    cfg = make_cfg("anthropic", fake.url)
    gw = gateway_for(cfg, tmp_path)
    try:
        original = gw.client().complete("recorded", role="code")
    finally:
        gw.close()
    replay_cfg = cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"mode": "replay"})})
    replay = gateway_for(replay_cfg, tmp_path)
    try:
        assert replay.client().complete("recorded", role="code").text == original.text
        with pytest.raises(CacheMiss, match="replay"):
            replay.client().complete("never asked", role="code")
    finally:
        replay.close()
    assert len(fake.requests) == 1


def test_price_override_and_zero_priced_local_model(fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.default = Reply.ok("ok", usage=(1000, 200, 0))
    gw = gateway_for(make_cfg("openai_compatible", fake.url, price=Price(input=0, output=0)), tmp_path)
    try:
        assert gw.client().complete("a", role="code").dollars == 0.0
    finally:
        gw.close()


def test_a_timed_out_call_is_ledgered_with_its_wall_time_attempts_and_charge(
    fake: FakeLLMServer, tmp_path: Path
) -> None:
    """Two attempts that never answered: the row keeps the time they took, both attempts, the
    prompt sent twice (estimated) and its charge, since the provider read it each time."""
    fake.script(Reply.ok("too late", delay_s=3.0), Reply.ok("too late", delay_s=3.0))
    gw = gateway_for(make_cfg("openai", fake.url, timeout_s=0.4, max_retries=1), tmp_path)
    try:
        with pytest.raises(LLMCallError, match="no answer within 0.4s"):
            gw.client().complete("x" * 300, role="code")
    finally:
        gw.close()
    (row,) = read_records(tmp_path / LEDGER_FILE)
    assert row.attempts == 2 and row.retries == 1 and row.error
    assert row.wall_s >= 0.8 and row.latency_s == row.wall_s  # two deadlines, at least
    assert row.input_tokens == 2 * 100  # ~3 characters a token, sent twice
    assert row.dollars == row.lost_dollars == pytest.approx(Price(input=3.0, output=15.0).dollars(200, 0, 0))
    assert gw.spent() == pytest.approx(row.dollars)


def test_a_call_queued_past_its_deadline_fails_unsent(fake: FakeLLMServer, tmp_path: Path) -> None:
    """At one request a second, the third of three calls would be sent after its deadline: the
    wait in the gateway's queue counts inside the deadline, and it fails unsent and uncharged."""
    gw = gateway_for(make_cfg("openai", fake.url, timeout_s=1.5, max_retries=0, rpm=60), tmp_path)
    llm = gw.client()
    errors: dict[str, str] = {}

    def ask(name: str) -> None:
        try:
            llm.complete(name * 30, role="code", node_id=name)
        except LLMCallError as exc:
            errors[name] = str(exc)

    threads = [threading.Thread(target=ask, args=(name,)) for name in "abc"]
    try:
        for t in threads:
            t.start()
            time.sleep(0.05)  # queued in this order
        for t in threads:
            t.join()
    finally:
        gw.close()
    rows = {r.node_id: r for r in read_records(tmp_path / LEDGER_FILE)}
    assert len(fake.requests) == 2 and list(errors) == ["c"] and "gateway's queue" in errors["c"]
    assert rows["c"].attempts == 0 and rows["c"].dollars == 0 and rows["c"].queued_s > 1.0
    assert rows["b"].attempts == 1 and rows["b"].queued_s > 0.5


@pytest.mark.slow
def test_status_shows_the_calls_waiting_in_the_gateways_queue(fake: FakeLLMServer, tmp_path: Path) -> None:
    """One slot, a slow call in it and two behind: the queue file `silva status` reads names them
    and how long the longest has waited; once they are through it says none waits."""
    from silva.status import queue_line

    fake.handler = lambda rec: Reply.ok("slow", delay_s=2.0)
    gw = gateway_for(make_cfg("openai", fake.url, max_concurrency=1, timeout_s=30), tmp_path)
    llm = gw.client()
    threads = [
        threading.Thread(target=llm.complete, args=(f"q{i}",), kwargs={"role": "code", "node_id": f"n{i}"})
        for i in range(3)
    ]
    try:
        for t in threads:
            t.start()
        line = None
        for _ in range(100):  # polled: the file is rewritten at most once a second
            time.sleep(0.1)
            line = queue_line(tmp_path)
            if line and "2 calls waiting" in line:
                break
        assert line is not None and "LLM queue: 2 calls waiting for the provider's concurrency" in line
        assert re.search(r"the longest \d+ s \(code, node n\d\)", line)
        for t in threads:
            t.join()
        for _ in range(50):
            time.sleep(0.1)
            if queue_line(tmp_path) == "LLM queue: no call waiting":
                break
        assert queue_line(tmp_path) == "LLM queue: no call waiting"
    finally:
        gw.close()
