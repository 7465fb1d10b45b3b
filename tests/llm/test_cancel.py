"""A job cancelled on the in-process executor (its node discarded) stops paying for LLM calls:
its call in flight is cancelled and charged the prompt, and it asks nothing more."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.config import Resources
from engine.executor import InProcessExecutor
from engine.llm import LLM
from engine.llm.ledger import LEDGER_FILE, read_records
from engine.node import AttemptResult, StepResult
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import gateway_for, make_cfg


@dataclass
class AsksTwice:
    """A job that asks one call and then another (as a re-ask would)."""

    llm: LLM
    asking: threading.Event
    node_id: str = "n0001"
    attempt: int = 1

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult | StepResult:
        self.asking.set()
        self.llm.complete("first", role="code", node_id=self.node_id)
        self.llm.complete("second", role="code", node_id=self.node_id)
        return AttemptResult(status="good")


def test_a_cancelled_job_gives_up_its_call_and_asks_nothing_more(fake: FakeLLMServer, tmp_path: Path) -> None:
    gw = gateway_for(make_cfg("openai", fake.url, hedge=None), tmp_path)
    executor = InProcessExecutor(2)
    try:
        fake.script(Reply.ok("slow", delay_s=3.0), Reply.ok("never asked"))
        asking = threading.Event()
        handle = executor.submit(AsksTwice(gw.client(), asking), Resources(num_cpus=0))
        assert asking.wait(5)
        while not fake.requests:  # the first call has reached the server
            threading.Event().wait(0.02)
        executor.cancel(handle)
        executor.shutdown()  # returns once the job has given up: it waits for no answer
    finally:
        gw.close()  # the cancelled call's record is written on the gateway's loop
    records = read_records(tmp_path / LEDGER_FILE)
    assert len(fake.requests) == 1  # the second call was never sent
    assert [r.error for r in records] == ["cancelled: the job that asked no longer needs it"]
    assert records[0].dollars > 0 and records[0].input_tokens > 0  # the prompt is charged


def test_an_uncancelled_job_on_the_executor_gets_its_answers(fake: FakeLLMServer, tmp_path: Path) -> None:
    gw = gateway_for(make_cfg("openai", fake.url, hedge=None), tmp_path)
    executor = InProcessExecutor(2)
    try:
        fake.script(Reply.ok("one", delay_s=0.5), Reply.ok("two"))
        handle = executor.submit(AsksTwice(gw.client(), threading.Event()), Resources(num_cpus=0))
        done = executor.wait([handle], timeout=30)
        executor.shutdown()
    finally:
        gw.close()
    assert done is not None and isinstance(done.result, AttemptResult) and done.result.status == "good"
    assert len(fake.requests) == 2 and all(r.error is None for r in read_records(tmp_path / LEDGER_FILE))
