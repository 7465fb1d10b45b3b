"""The claims check's model layer with a real model (SmolLM2-135M under llama.cpp): the layer runs
end to end on Silva's offline report (the prompt fits the 8,192-token context, the answer is held
to the record's schema by the server's grammar) and yields valid records or says it failed. No
assertion on the model's quality."""

from __future__ import annotations

import re
from pathlib import Path

from engine.llm import LLMConfig, build_gateway
from review import ReviewConfig
from review.integrity import run_checks
from review.paper import resolve
from tests.realmodel.conftest import llm_section
from tests.realmodel.llama_server import LocalServer
from tests.writeup.support import make_run
from writeup.config import WriteupConfig
from writeup.offline import report
from writeup.paper import open_paper

REVIEW_TOKENS = 512


def test_smollm2_extracts_comparisons_for_the_claims_check(local_model: LocalServer, tmp_path: Path) -> None:
    paper = open_paper(make_run(tmp_path), None, WriteupConfig(), sandbox="none")
    (paper.dir / "results.tex").write_text(paper.macros.tex())
    (paper.dir / "paper.tex").write_text(report(paper.run, paper.idea, paper.macros, [], "workshop"))
    (paper.dir / "references.bib").write_text("")
    (resolved,) = resolve(paper.dir)
    # No re-ask (test_local_model covers it): a cut answer was asked again, 512 tokens more.
    section = llm_section(local_model.url, review=REVIEW_TOKENS)
    cfg = LLMConfig.model_validate({**section, "probe": False, "max_reasks": 0})
    gw = build_gateway(cfg, tmp_path / "llm", None, {})
    try:
        check = run_checks(resolved, ReviewConfig(page_limit=9, llm_claims=True), gw.client()).check(
            "unsupported_claims"
        )
    finally:
        gw.close()
    assert check.status in ("ok", "findings")
    layer = re.search(r"the model's extraction (?:\((\d+) statement\(s\)|FAILED)", check.detail)
    assert layer is not None, check.detail
    assert re.search(r"[1-9]\d* call\(s\), \$0\.0000", check.detail), check.detail  # a free local model
    model = [f for f in check.findings if f.message.startswith("model layer:")]
    assert all("read as" in f.message for f in model)
