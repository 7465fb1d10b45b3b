"""SmolLM2-135M (8,192-token context) as Silva's LLM writer and reviewer of a finished run's
paper: every prompt fits its context, the model drafts the sections asked (poor prose is expected),
the claim check reads its text, and the reviewer reviews it or says why not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.llm import LLMConfig, build_gateway
from engine.llm.ledger import LEDGER_FILE, read_records
from review import ReviewConfig, review_paper
from tests.realmodel.conftest import llm_section
from tests.realmodel.llama_server import LocalServer
from tests.writeup.support import make_run
from writeup.config import WriteupConfig
from writeup.files import fallback_reason
from writeup.paper import write_paper

SECTION_TOKENS = 160  # short sections keep the test to minutes on a loaded 2-core host
# One section besides the abstract (writeup.sections): Results, where the figures and the numbers
# go. The paper's eight sections took 13 writer calls, 6 minutes at load 5-10.
SECTIONS = ["Results"]
REVIEW_TOKENS = 1024


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("latexmk") is None, reason="TeX Live missing: make system-deps")
@pytest.mark.timeout(3600)  # about a minute idle; a host at load 30 wrote 1-4 tokens/s
def test_smollm2_writes_and_reviews_a_paper(local_model: LocalServer, tmp_path: Path) -> None:
    run = make_run(tmp_path)
    # No re-ask (test_local_model covers it): an answer cut at max_tokens was asked again twice,
    # up to three 1,024-token reviews and three meta-reviews.
    section = llm_section(local_model.url, writeup=SECTION_TOKENS, review=REVIEW_TOKENS)
    cfg = LLMConfig.model_validate({**section, "probe": False, "max_reasks": 0})
    gw = build_gateway(cfg, run, None, {})
    try:
        pdf = write_paper(
            run,
            llm=gw.client(),
            cfg=WriteupConfig(reflection_rounds=0, literature={"provider": "none"}, sections=SECTIONS),
            sandbox="none",
        )
        review = review_paper(pdf, gw.client(), ReviewConfig(reviews=1, page_images=0, page_limit=None))
    finally:
        gw.close()
    assert fallback_reason(pdf.parent) is None  # the model wrote it, not the offline report
    log = [json.loads(line) for line in (pdf.parent / "writeup.jsonl").read_text().splitlines()]
    drafted = [e["name"] for e in log if e["step"] == "llm_call" and e["call"] == "section"]
    assert drafted == ["Abstract", *SECTIONS]
    rows = read_records(run / LEDGER_FILE)
    assert rows and all(
        r.input_tokens + REVIEW_TOKENS <= 8192 for r in rows if r.role in ("writeup", "review")
    )
    assert all("context" not in (r.error or "") for r in rows)  # no prompt was refused for its size
    # The claim check ran on the model's text; the review is there or its failure is stated.
    assert review.integrity.check("unsupported_claims").status in ("ok", "findings")
    (one,) = review.reviews
    assert one.status == "ok" or one.error
