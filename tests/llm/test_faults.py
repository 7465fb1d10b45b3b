"""Fault tolerance through the real SDKs: 429 + Retry-After, 5xx, timeouts, malformed bodies."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.llm import LLMCallError, summarize
from engine.llm.ledger import LEDGER_FILE, read_records
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import KINDS, gateway_for, make_cfg


@pytest.mark.parametrize("kind", KINDS)
def test_429_honours_retry_after(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.error(429, retry_after="0.4"), Reply.ok("after the wait"))
    gw = gateway_for(make_cfg(kind, fake.url), tmp_path)
    try:
        start = time.monotonic()
        out = gw.client().complete("hi", role="code")
        elapsed = time.monotonic() - start
    finally:
        gw.close()
    assert out.text == "after the wait" and out.retries == 1
    assert elapsed >= 0.4  # backoff_base_s is 0.01: only Retry-After explains the wait
    assert len(fake.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_5xx_retried_then_succeeds(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.error(500), Reply.error(503), Reply.ok("third time"))
    gw = gateway_for(make_cfg(kind, fake.url), tmp_path)
    try:
        out = gw.client().complete("hi", role="code")
    finally:
        gw.close()
    assert out.text == "third time" and out.retries == 2


@pytest.mark.parametrize("kind", KINDS)
def test_retries_are_bounded_and_failure_recorded(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.default = Reply.error(500)
    gw = gateway_for(make_cfg(kind, fake.url, max_retries=2), tmp_path)
    try:
        with pytest.raises(LLMCallError, match="after 3 attempts.*HTTP 500"):
            gw.client().complete("hi", role="code", node_id="n7")
    finally:
        gw.close()
    assert len(fake.requests) == 3
    (record,) = read_records(tmp_path / LEDGER_FILE)
    assert record.node_id == "n7" and record.error and record.dollars == 0
    assert summarize(tmp_path)["run"]["errors"] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_client_errors_are_not_retried(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.error(400))
    gw = gateway_for(make_cfg(kind, fake.url), tmp_path)
    try:
        with pytest.raises(LLMCallError, match="not retryable.*HTTP 400"):
            gw.client().complete("hi", role="code")
    finally:
        gw.close()
    assert len(fake.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_timeout_then_retry(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.ok("warm"), Reply.ok("too late", delay_s=8.0), Reply.ok("in time"))
    gw = gateway_for(make_cfg(kind, fake.url, timeout_s=0.5), tmp_path)
    try:
        gw.client().complete("warm", role="code")  # the SDK's import and first connection: not timed
        start = time.monotonic()
        out = gw.client().complete("hi", role="code")
        elapsed = time.monotonic() - start
    finally:
        gw.close()
    assert out.text == "in time" and out.retries == 1
    assert elapsed < 6.0  # the 8 s answer was abandoned at the deadline, not awaited


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_body_retried(kind: str, fake: FakeLLMServer, tmp_path: Path) -> None:
    fake.script(Reply.malformed(), Reply.ok("well formed"))
    gw = gateway_for(make_cfg(kind, fake.url), tmp_path)
    try:
        out = gw.client().complete("hi", role="code")
    finally:
        gw.close()
    assert out.text == "well formed" and out.retries == 1


def test_unreachable_endpoint_fails_after_bounded_retries(tmp_path: Path) -> None:
    cfg = make_cfg("openai", "http://127.0.0.1:9", max_retries=1)  # port 9: nothing listens
    gw = gateway_for(cfg, tmp_path)
    try:
        with pytest.raises(LLMCallError, match="after 2 attempts.*connection error"):
            gw.client().complete("hi", role="code")
    finally:
        gw.close()


def test_rpm_limit_paces_requests(fake: FakeLLMServer, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    gw = gateway_for(make_cfg("openai", fake.url, rpm=600), tmp_path)  # 10/s, burst of 10
    client = gw.client()
    try:
        start = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            outs = list(pool.map(lambda i: client.complete(f"q{i}", role="code"), range(25)))
        elapsed = time.monotonic() - start
    finally:
        gw.close()
    assert len(outs) == 25
    assert elapsed >= 1.4  # 10 at once, then 15 more at 10/s


def test_max_concurrency_respected(fake: FakeLLMServer, tmp_path: Path) -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor

    active, peak, lock = 0, 0, threading.Lock()

    def handler(rec: object) -> Reply:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.1)
        with lock:
            active -= 1
        return Reply.ok("done")

    fake.handler = handler
    gw = gateway_for(make_cfg("anthropic", fake.url, max_concurrency=3), tmp_path)
    client = gw.client()
    try:
        with ThreadPoolExecutor(10) as pool:
            list(pool.map(lambda i: client.complete(f"q{i}", role="code"), range(10)))
    finally:
        gw.close()
    assert peak == 3


def test_parse_retry_after_forms() -> None:
    from email.utils import formatdate

    from engine.llm.providers.base import parse_retry_after

    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    in_ten = parse_retry_after({"retry-after": formatdate(time.time() + 10, usegmt=True)})
    assert in_ten is not None and 8 < in_ten <= 10
    assert parse_retry_after({}) is None
