"""Hedged requests through the real SDKs: a call slower than its role's usual latency is sent once
more, the first answer wins, the other copy is paid for (or charged at an estimate) and the
dollar budget, the concurrency limit and the ledger all see both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.llm import LLMCallError, render_summary, summarize
from engine.llm.config import HedgeConfig, ProviderConfig
from engine.llm.hedge import LatencyBook
from engine.llm.ledger import LEDGER_FILE, CallRecord, read_records
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import KINDS, PRICE, gateway_for, make_cfg

# Uncapped: these tests are about how copies race; the spend cap has its own test.
QUICK = {"quantile": 0.5, "min_samples": 3, "min_delay_s": 0.2, "max_extra_fraction": None}


def warm(gw: Any, n: int = 3) -> None:
    """Calls that answer at once: the book learns what usual is."""
    for i in range(n):
        gw.client().complete(f"warm {i}", role="code")


@pytest.mark.parametrize("kind", KINDS)
def test_a_slow_call_is_sent_again_and_the_first_answer_wins(
    kind: str, fake: FakeLLMServer, tmp_path: Path
) -> None:
    gw = gateway_for(make_cfg(kind, fake.url, hedge=QUICK), tmp_path)
    try:
        warm(gw)
        fake.script(Reply.ok("slow copy", delay_s=3.0), Reply.ok("fast copy"))
        out = gw.client().complete("the slow one", role="code")
        spent = gw.spent()
    finally:
        gw.close()
    assert out.text == "fast copy"
    assert len(fake.requests) == 5  # 3 warm-up calls, then the same request twice
    assert fake.requests[3].body == fake.requests[4].body
    records = read_records(tmp_path / LEDGER_FILE)
    won, lost = records[-2:]
    assert (won.hedge, lost.hedge) == ("won", "lost") and won.key == lost.key
    # The cancelled copy is charged as if it had read the prompt and written the winner's answer.
    assert lost.dollars == pytest.approx(won.dollars) and lost.dollars > 0 and lost.error is None
    assert spent == pytest.approx(sum(r.dollars for r in records))
    summary = summarize(tmp_path)
    assert summary["run"]["hedged"] == 1 and summary["run"]["calls"] == 5
    share = f"{100 * lost.dollars / spent:.1f}%"
    # what `silva status` prints
    assert (
        f"(0 cached, 0 failed, 1 hedged copy ${lost.dollars:.4f} = {share} of the spend)"
        in render_summary(summary)
    )


@pytest.mark.parametrize(
    ("why", "provider", "warmed", "dollars"),
    [
        ("hedging is off", {"hedge": None}, 3, None),
        ("fewer calls seen than min_samples (3)", {"hedge": QUICK}, 2, None),
        # The call's worst case takes most of what is left: a second reservation would not fit.
        ("the dollar budget has no room for a copy", {"hedge": QUICK}, 3, 1.5 * PRICE.dollars(0, 256, 0)),
        ("the provider is at its concurrency limit", {"hedge": QUICK, "max_concurrency": 1}, 3, None),
    ],
)
def test_no_copy_is_sent_when(
    why: str,
    provider: dict[str, Any],
    warmed: int,
    dollars: float | None,
    fake: FakeLLMServer,
    tmp_path: Path,
) -> None:
    gw = gateway_for(
        make_cfg("openai", fake.url, **provider), tmp_path, dollars=None if dollars is None else 1.0
    )
    try:
        warm(gw, warmed)
        if dollars is not None:
            gw.budget.spent = 1.0 - dollars
        fake.script(Reply.ok("slow copy", delay_s=0.6), Reply.ok("fast copy"))
        out = gw.client().complete("the slow one", role="code")
    finally:
        gw.close()
    assert out.text == "slow copy" and len(fake.requests) == warmed + 1, why
    assert all(r.hedge is None for r in read_records(tmp_path / LEDGER_FILE))


def test_by_default_no_call_is_sent_twice(fake: FakeLLMServer, tmp_path: Path) -> None:
    """Hedging is off unless a provider turns it on: slow calls, blocking or not, after plenty
    of history, go out once."""
    assert ProviderConfig(kind="openai").hedge is None
    assert HedgeConfig().at_once_when_blocking is False
    gw = gateway_for(make_cfg("openai", fake.url), tmp_path)
    try:
        warm(gw, 25)
        fake.script(Reply.ok("slow", delay_s=0.6), Reply.ok("slow blocking", delay_s=0.6))
        gw.client().complete("the slow one", role="code")
        gw.client().complete("which node is best?", role="feedback", blocking=True)
    finally:
        gw.close()
    assert len(fake.requests) == 27
    assert not any(r.hedge for r in read_records(tmp_path / LEDGER_FILE))


@pytest.mark.slow
def test_copies_spend_stays_under_its_cap(fake: FakeLLMServer, tmp_path: Path) -> None:
    """Every blocking call asks for a copy at once; copies go out only while their worst case
    fits in `max_extra_fraction` of the spend so far, and the ledger says what they cost."""
    hedge = {**QUICK, "at_once_when_blocking": True, "max_extra_fraction": 0.25}
    roles = {"feedback": {"model": "m", "temperature": 0.0, "max_tokens": 16}}
    gw = gateway_for(make_cfg("openai", fake.url, hedge=hedge, roles=roles), tmp_path)
    fake.handler = lambda rec: Reply.ok("verdict", delay_s=0.05, usage=(12, 7, 0))
    try:
        for i in range(40):
            gw.client().complete(f"judge {i}", role="feedback", blocking=True)
    finally:
        gw.close()
    records = read_records(tmp_path / LEDGER_FILE)
    copies = [r for r in records if r.hedge == "lost"]
    spent = sum(r.dollars for r in records)
    assert 0 < len(copies) < 40  # the cap let some copies go, and held the others back
    assert sum(r.dollars for r in copies) <= 0.25 * spent
    assert summarize(tmp_path)["run"]["hedged_dollars"] == pytest.approx(sum(r.dollars for r in copies))


@pytest.mark.parametrize("at_once", [True, False])
def test_a_blocking_call_is_sent_twice_at_once(at_once: bool, fake: FakeLLMServer, tmp_path: Path) -> None:
    """A call a decision waits for (a stage's selection) needs no history to be hedged: nothing
    was seen yet, and both copies go out together."""
    hedge = {**QUICK, "at_once_when_blocking": at_once}
    gw = gateway_for(make_cfg("openai", fake.url, hedge=hedge), tmp_path)
    try:
        fake.script(Reply.ok("an ordinary call", delay_s=0.5))
        plain = gw.client().complete("an ordinary call", role="feedback")
        fake.script(Reply.ok("slow copy", delay_s=2.0), Reply.ok("fast copy"))
        out = gw.client().complete("which node is best?", role="feedback", blocking=True)
    finally:
        gw.close()
    assert plain.text == "an ordinary call"  # not blocking, and too few calls seen: sent once
    if not at_once:
        assert out.text == "slow copy" and len(fake.requests) == 2
        return
    assert out.text == "fast copy" and len(fake.requests) == 3
    assert fake.requests[1].body == fake.requests[2].body
    _, won, lost = read_records(tmp_path / LEDGER_FILE)
    assert (won.hedge, lost.hedge) == ("won", "lost") and won.latency_s < 1.0


def test_when_one_copy_fails_the_other_answers(fake: FakeLLMServer, tmp_path: Path) -> None:
    gw = gateway_for(make_cfg("openai", fake.url, hedge=QUICK, max_retries=0), tmp_path)
    try:
        warm(gw)
        fake.script(Reply.ok("slow copy", delay_s=0.6), Reply.error(400))
        out = gw.client().complete("the slow one", role="code")
    finally:
        gw.close()
    assert out.text == "slow copy" and len(fake.requests) == 5
    won, lost = read_records(tmp_path / LEDGER_FILE)[-2:]
    assert won.hedge == "won" and lost.hedge == "lost"
    assert "HTTP 400" in (lost.error or "") and lost.dollars == 0.0  # a refused copy bills nothing


def test_when_both_copies_fail_the_call_fails_and_nothing_stays_reserved(
    fake: FakeLLMServer, tmp_path: Path
) -> None:
    gw = gateway_for(make_cfg("openai", fake.url, hedge=QUICK, max_retries=0), tmp_path, dollars=5.0)
    try:
        warm(gw)
        fake.script(Reply("status", status=400, delay_s=0.6), Reply.error(400))
        with pytest.raises(LLMCallError, match="HTTP 400"):
            gw.client().complete("doomed", role="code")
        assert len(fake.requests) == 5
        assert gw.budget.reserved == 0.0 and gw.budget._in_flight == 0
        assert gw.spent() == pytest.approx(sum(r.dollars for r in read_records(tmp_path / LEDGER_FILE)))
    finally:
        gw.close()


def test_the_latency_book_reads_the_ledger_and_keeps_slow_copies_as_lower_bounds() -> None:
    def rec(latency: float, **kw: Any) -> CallRecord:
        return CallRecord(role="code", provider="p", model="m", latency_s=latency, **kw)

    cfg = HedgeConfig(quantile=0.9, min_samples=10, min_delay_s=0.0)
    book = LatencyBook([rec(1.0)] * 9 + [rec(50.0, error="boom"), rec(0.0, cache_hit=True)])
    assert book.delay(("p", "m", "code"), cfg) is None  # 9 usable calls: not yet 10
    book.add(("p", "m", "code"), 8.0)  # a first copy that lost after 8 s: at least that slow
    assert book.delay(("p", "m", "code"), cfg) == 1.0
    book.add(("p", "m", "code"), 9.0)
    assert book.delay(("p", "m", "code"), cfg) == 8.0  # the tail includes the censored times
    assert book.delay(("p", "m", "feedback"), cfg) == 8.0  # too few calls of its own: its model's
    for _ in range(10):
        book.add(("p", "m", "feedback"), 0.5)
    assert book.delay(("p", "m", "feedback"), cfg) == 0.5  # then its own
    assert book.delay(("p", "m2", "code"), cfg) is None  # another model: nothing seen
    assert book.delay(("p", "m", "code"), HedgeConfig(min_samples=1, min_delay_s=30.0)) == 30.0
    assert book.delay(("p", "m", "code"), None) is None
    # A hedged pair in the ledger counts once, as its first copy: the longer-running of the two.
    pair = [rec(0.5, hedge="won", key="k"), rec(6.0, hedge="lost", key="k")]
    resumed = LatencyBook([rec(1.0)] * 9 + pair)
    assert resumed.delay(("p", "m", "code"), cfg.model_copy(update={"quantile": 0.95})) == 6.0
