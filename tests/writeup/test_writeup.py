"""The paper writer end to end: scripted LLM paper, offline report, sandboxed TeX, citations,
numbers, resume. Compiles are the cost here (a few seconds each), so each test compiles little."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.llm import LEDGER_FILE, CallRecord
from sandbox.base import SandboxUnavailable, get_provider
from silva.cli.main import main
from silva.cli.run import paper_kind
from tests.writeup.fake_s2 import fake_s2
from tests.writeup.support import PNG_FIGURE_SCRIPT, SEEDS, ScriptedWriter, make_run, scripted_llm
from writeup.compile import TexBox
from writeup.config import LiteratureConfig, WriteupConfig
from writeup.literature import open_literature
from writeup.paper import write_paper
from writeup.run_reader import NOTES_DIR

pytestmark = [
    pytest.mark.skipif(shutil.which("latexmk") is None, reason="TeX Live missing: make system-deps"),
    pytest.mark.e2e,  # every test compiles a paper
]


def _sandbox() -> str:
    try:
        get_provider("local").check()
        return "local"
    except SandboxUnavailable:
        return "none"


def _log(pdf: Path) -> list[dict]:
    return [json.loads(line) for line in (pdf.parent / "writeup.jsonl").read_text().splitlines()]


def _pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def test_scripted_llm_writes_full_paper_fixing_latex_cites_and_numbers(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    writer = ScriptedWriter(bad_latex=True, fake_cite=True, typed_number=True)  # the figure by matplotlib
    llm, gateway = scripted_llm(run, writer)
    with fake_s2(fail_first=1) as (url, server):
        lit = open_literature(LiteratureConfig(base_url=url, requests_per_s=100), backoff_s=0.01)
        pdf = write_paper(
            run, llm=llm, literature=lit, cfg=WriteupConfig(reflection_rounds=1), sandbox=_sandbox()
        )
    gateway.close()
    log = _log(pdf)
    compiles = [e for e in log if e["step"] == "compile"]
    # The injected LaTeX error failed the draft with file and line, and the fix loop repaired it.
    assert not compiles[0]["ok"] and any("Undefined control sequence" in e for e in compiles[0]["errors"])
    assert compiles[1]["ok"] and compiles[1]["round"] == "draft-fix-1"
    # The typed number was caught by the checker, then fixed in the reflection round.
    assert compiles[0]["untraced"] == ["0.987"]
    tex = (pdf.parent / "paper.tex").read_text()
    assert "0.987" not in tex and "0.987" not in _pdf_text(pdf)
    # The unresolved cite was rejected; the verified ones came from the fake server's records.
    assert "madeup2024phantom" not in tex
    assert any(e["step"] == "citations_removed" and e["keys"] == ["madeup2024phantom"] for e in log)
    bib = (pdf.parent / "references.bib").read_text()
    assert "rahimi2007random" in bib and "li2006very" in bib and "\\cite{rahimi2007random,li2006very}" in tex
    assert len(server.requests) == 2  # one 429 retried with backoff
    # Every section was written, each figure used once and referenced.
    for section in (
        "Introduction",
        "Method",
        "Experiments",
        "Results",
        "Related Work",
        "Limitations",
        "Conclusion",
    ):
        assert f"\\section{{{section}}}" in tex
    assert tex.count("\\includegraphics") == 1 and "\\ref{fig:comparison}" in tex
    # The numbers in the PDF text equal the results.
    numbers = json.loads((pdf.parent / "numbers.json").read_text())
    assert numbers["untraced"] == [] and numbers["pdf_missing"] == [] and numbers["pdf_checked"] >= 6
    text = " ".join(_pdf_text(pdf).split())
    method = SEEDS["method (best of tuning)"]["accuracy"]
    assert f"{sum(method) / 3:.3f}" in text
    assert {"figures", "section", "fix", "revise", "review_figure"} <= set(writer.calls)
    assert any(e["step"] == "llm_call" and e["calls"] >= 1 for e in log)


@pytest.fixture(scope="module")
def unfixed_paper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One paper whose typed number and false claim no reflection round fixes (one compile
    serves both tests below)."""
    run = make_run(tmp_path_factory.mktemp("unfixed"))
    writer = ScriptedWriter(
        typed_number=True, fixes_numbers=False, false_claim=True, figure_script=PNG_FIGURE_SCRIPT
    )
    llm, gateway = scripted_llm(run, writer)
    pdf = write_paper(run, llm=llm, cfg=WriteupConfig(reflection_rounds=1), sandbox=_sandbox())
    gateway.close()
    return pdf


def test_untraced_number_removed_when_reflection_does_not_fix_it(unfixed_paper: Path) -> None:
    pdf = unfixed_paper
    assert any(e["step"] == "numbers_removed" and e["numbers"] == ["0.987"] for e in _log(pdf))
    assert "0.987" not in (pdf.parent / "paper.tex").read_text()
    assert json.loads((pdf.parent / "numbers.json").read_text())["untraced"] == []


def test_sentence_contradicting_its_claim_is_sent_back_then_removed(unfixed_paper: Path) -> None:
    pdf = unfixed_paper
    log = _log(pdf)
    (reflection,) = [e for e in log if e["step"] == "reflection"]
    assert any("contradicts claim tuning-AvsB-accuracy" in i and "'worse'" in i for i in reflection["issues"])
    (removed,) = [e for e in log if e["step"] == "claims_removed"]
    assert "significantly worse than the baseline" in removed["sentences"][0]
    assert "significantly worse" not in (pdf.parent / "paper.tex").read_text()
    assert "significantly worse" not in " ".join(_pdf_text(pdf).split())


def test_offline_report_via_cli_compiles_and_renders(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    assert main(["writeup", str(run), "--offline", "--template", "conference"]) == 0
    pdf = run / "paper" / "default" / "paper.pdf"
    assert pdf.is_file() and (pdf.parent / "figures" / "fig_stages.png").is_file()
    subprocess.run(["pdftoppm", "-png", "-r", "40", str(pdf), str(tmp_path / "page")], check=True)
    assert sorted(tmp_path.glob("page-*.png"))
    text = " ".join(_pdf_text(pdf).split())
    assert "Welch" in text and "Search tree" in text
    numbers = json.loads((pdf.parent / "numbers.json").read_text())
    assert numbers["untraced"] == [] and numbers["pdf_missing"] == []
    ledger = json.loads((pdf.parent / "ledger.json").read_text())
    assert ledger["headline_id"] == "tuning-AvsB-accuracy" and "significantly better than" in text
    assert main(["writeup", str(run), "--idea", "nope", "--offline"]) == 2


class Killed(BaseException):
    """A kill of the writer's process between two LLM calls (nothing catches a BaseException)."""


def test_resume_after_kill_pays_no_call_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from writeup.llm_writer import LLMWriter

    run = make_run(tmp_path)
    cfg = WriteupConfig(reflection_rounds=0, max_fix_rounds=1)
    ask = LLMWriter.ask
    asked: list[str] = []

    def dying_ask(self: LLMWriter, step: str, *args: Any, **kwargs: Any) -> object:
        if len(asked) == 5:
            raise Killed
        asked.append(step)
        return ask(self, step, *args, **kwargs)

    monkeypatch.setattr(LLMWriter, "ask", dying_ask)
    llm, gateway = scripted_llm(run, ScriptedWriter(figure_script=PNG_FIGURE_SCRIPT), price=1.0)
    with pytest.raises(Killed):
        write_paper(run, llm=llm, cfg=cfg, sandbox=_sandbox())
    gateway.close()
    monkeypatch.setattr(LLMWriter, "ask", ask)
    llm, gateway = scripted_llm(run, ScriptedWriter(figure_script=PNG_FIGURE_SCRIPT), price=1.0)
    write_paper(run, llm=llm, cfg=cfg, sandbox=_sandbox())
    gateway.close()
    records = [CallRecord.model_validate_json(line) for line in (run / LEDGER_FILE).read_text().splitlines()]
    paid = [r for r in records if not r.cache_hit]
    assert sum(r.dollars for r in paid) > 0
    assert sum(r.cache_hit for r in records) == 5  # the five calls answered before the kill
    assert len(paid) == len(records) - 5  # everything else paid exactly once


def test_every_prompt_fits_a_small_model_context(tmp_path: Path) -> None:
    """An 8k context with 5k of it kept for the answer, and a long experimental journal: every
    prompt is cut to fit, by priority, and the LLM writer still drafts every section."""
    run = make_run(tmp_path)
    notes = run / NOTES_DIR / "default" / "journal.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text(
        "".join(f"- node {i}: tried a learning rate, accuracy rose a little\n" for i in range(1200))
    )
    # A step the paper can do without (the captions) fails.
    writer = ScriptedWriter(bad_captions=True, figure_script=PNG_FIGURE_SCRIPT)
    llm, gateway = scripted_llm(run, writer, context_tokens=8192, max_tokens=5120)
    pdf = write_paper(run, llm=llm, cfg=WriteupConfig(reflection_rounds=0), sandbox=_sandbox())
    gateway.close()
    log = _log(pdf)
    assert not any(e["step"] in ("llm_failed", "offline_fallback") for e in log)
    assert [e["call"] for e in log if e["step"] == "step_failed"] == ["captions"]
    tex = (pdf.parent / "paper.tex").read_text()
    assert all(f"\\section{{{s}}}" in tex for s in ("Introduction", "Results", "Conclusion"))
    records = [CallRecord.model_validate_json(line) for line in (run / LEDGER_FILE).read_text().splitlines()]
    assert records and all("context" not in (r.error or "") for r in records)  # none refused for size
    assert paper_kind(pdf) == "paper"


def test_a_writer_that_cannot_run_falls_back_and_says_so(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    llm, gateway = scripted_llm(run, ScriptedWriter(), context_tokens=1500, max_tokens=512)
    pdf = write_paper(run, llm=llm, cfg=WriteupConfig(reflection_rounds=0), sandbox=_sandbox())
    gateway.close()
    (fallback,) = [e for e in _log(pdf) if e["step"] == "offline_fallback"]
    assert "role 'writeup': the prompt needs at least ~" in fallback["why"]
    line = paper_kind(pdf)  # what the run's last lines and `silva writeup` print
    assert line.startswith("offline report (the LLM writer failed: role 'writeup'") and "1500-token" in line


def test_host_file_reads_fail_during_compile(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOPSECRETVALUE\n")
    docs = {
        "inp.tex": "\\documentclass{article}\\begin{document}X \\input{/etc/passwd} \\end{document}\n",
        "opn.tex": "\\documentclass{article}\\begin{document}\\newread\\f\\openin\\f="
        + str(secret)
        + " \\ifeof\\f NOREAD\\else\\read\\f to\\x READ:\\x\\fi\\end{document}\n",
    }
    for provider in {_sandbox(), "none"}:  # `none`: the TeX settings alone must refuse
        build = tmp_path / provider
        box = TexBox(get_provider(provider), build)
        box.exec(["true"], files={k: v.encode() for k, v in docs.items()})
        res = box.compile("inp.tex")
        assert not res.ok and any("passwd" in e.message for e in res.errors)
        assert "root:x:0" not in (build / "inp.log").read_text(errors="replace")
        res = box.compile("opn.tex")
        assert res.ok
        text = box.text("opn.pdf")
        assert "NOREAD" in text and "TOPSECRET" not in text


def test_a_draft_that_never_compiles_falls_back_and_says_so(tmp_path: Path) -> None:
    """The fix step answers with the whole paper: a model whose max_tokens cannot hold it skips
    the fix, so a draft with a LaTeX error never compiles and the offline report stands in."""
    run = make_run(tmp_path)
    llm, gateway = scripted_llm(
        run,
        ScriptedWriter(bad_latex=True, figure_script=PNG_FIGURE_SCRIPT),
        context_tokens=8192,
        max_tokens=256,
    )
    pdf = write_paper(run, llm=llm, cfg=WriteupConfig(reflection_rounds=0), sandbox=_sandbox())
    gateway.close()
    log = _log(pdf)
    assert any(e["step"] == "whole_paper_skipped" for e in log)
    assert paper_kind(pdf).startswith(
        "offline report (the LLM writer failed: no version the LLM writer drafted"
    )
