"""`writeup.sections`: the LLM writer drafts the listed sections, in order, one call each, and
refuses a list without Results (the figures' place)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.writeup.support import ScriptedWriter, make_run, scripted_llm
from writeup.config import SECTIONS, WriteupConfig
from writeup.paper import write_paper


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("latexmk") is None, reason="TeX Live missing: make system-deps")
def test_the_writer_drafts_the_configured_sections_only(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    llm, gateway = scripted_llm(run, ScriptedWriter())
    cfg = WriteupConfig(reflection_rounds=0, sections=["Results", "Conclusion"])
    try:
        pdf = write_paper(run, llm=llm, cfg=cfg, sandbox="none")
    finally:
        gateway.close()
    log = [json.loads(line) for line in (pdf.parent / "writeup.jsonl").read_text().splitlines()]
    assert [e["name"] for e in log if e["step"] == "llm_call" and e["call"] == "section"] == [
        "Abstract",
        "Results",
        "Conclusion",
    ]
    tex = (pdf.parent / "paper.tex").read_text()
    assert tex.index("\\section{Results}") < tex.index("\\section{Conclusion}")
    assert not any(f"\\section{{{s}}}" in tex for s in SECTIONS if s not in ("Results", "Conclusion"))
    assert "\\includegraphics" in tex  # the figures went into Results


@pytest.mark.parametrize("sections", [["Introduction", "Conclusion"], ["Results", "Results"], []])
def test_a_section_list_without_results_or_with_repeats_is_refused(sections: list[str]) -> None:
    with pytest.raises(ValidationError, match="sections"):
        WriteupConfig(sections=sections)
