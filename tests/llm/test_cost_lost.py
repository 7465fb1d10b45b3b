"""`silva cost` shows the time and money lost to timeouts, retries and hedged copies, per role,
from ledger rows the gateway wrote against a fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.llm import LLMCallError
from engine.llm.ledger import LEDGER_FILE, read_records
from silva.cli.cost import LOST_TITLE
from silva.cli.main import main
from tests.llm.fake_servers import FakeLLMServer, Reply
from tests.llm.support import gateway_for, make_cfg
from tests.view.synth import make_run


def test_cost_shows_what_timeouts_retries_and_copies_lost(
    fake: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha",), search_nodes=2, plots=False)
    before = len(read_records(run_dir / LEDGER_FILE))
    hedge = {"quantile": 0.5, "min_samples": 1, "min_delay_s": 0.2, "max_extra_fraction": None}
    gw = gateway_for(make_cfg("openai", fake.url, timeout_s=0.5, max_retries=1, hedge=hedge), run_dir)
    llm = gw.client()
    try:
        fake.script(Reply.ok("late", delay_s=3.0), Reply.ok("late", delay_s=3.0))
        with pytest.raises(LLMCallError):  # a call that failed: two attempts timed out
            llm.complete("doomed " * 30, role="code")
        fake.script(Reply.ok("late", delay_s=3.0), Reply.ok("in time"))
        llm.complete("retried " * 30, role="code")  # answered at its second attempt
        llm.complete("warm " * 30, role="review")  # a quick answer: the history hedging needs
        fake.script(Reply.ok("slow copy", delay_s=0.45), Reply.ok("fast copy"))
        assert llm.complete("hedged " * 30, role="feedback").text == "fast copy"
    finally:
        gw.close()
    new = read_records(run_dir / LEDGER_FILE)[before:]
    failed = next(r for r in new if r.error and r.role == "code")
    retried = next(r for r in new if r.error is None and r.role == "code")
    copy = next(r for r in new if r.hedge == "lost")
    assert failed.attempts == 2 and failed.wall_s >= 1.0 and failed.dollars > 0
    assert retried.attempts == 2 and retried.lost_dollars > 0 and retried.wall_s > 0.5
    assert copy.role == "feedback" and copy.dollars > 0

    assert main(["cost", str(run_dir), "--json"]) == 0
    lost = {r["key"]: r for r in json.loads(capsys.readouterr().out)["spend"]["lost"]}
    code, feedback = lost["code"], lost["feedback"]
    assert (code["failed"], code["retries"], code["copies"]) == (1, 1, 0)
    assert code["failed_s"] == pytest.approx(failed.wall_s)
    assert code["failed_dollars"] + code["retry_dollars"] == pytest.approx(
        failed.dollars + retried.lost_dollars
    )
    assert code["retry_s"] >= 0.4  # the first attempt's deadline, before the answer came
    assert feedback["copies"] == 1 and feedback["copy_dollars"] == pytest.approx(copy.dollars)
    assert main(["cost", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert LOST_TITLE in out
    table = out.split(LOST_TITLE)[1]
    line = next(ln for ln in table.splitlines() if ln.strip("│ ").startswith("code"))
    assert f"{failed.wall_s:.1f} s" in line
    total = code["failed_dollars"] + code["retry_dollars"]
    assert f"${total:.4f}" in line
