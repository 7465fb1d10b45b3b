"""From a run directory to RUN_DIR/paper/<idea>/: paper.tex, references.bib, results.tex,
figures/, paper.pdf, numbers.json and writeup.jsonl (every step, LLM call cost and compile).

Which writer writes an idea's paper: the failure report when no stage has a result, the offline
report, or the LLM writer (with the offline report standing in when it fails before any version).
Each writes versions through writeup/draft.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import ConfigError
from sandbox.base import get_provider
from writeup.config import WriteupConfig
from writeup.draft import Paper, Version, WriteupLog, finish
from writeup.failure_report import has_result, write_failure_report
from writeup.figures import make_figures
from writeup.files import FALLBACK_STEP, LOG_FILE, PAPER_DIR
from writeup.ledger import build_ledger
from writeup.results import build_macros
from writeup.run_reader import IdeaResults, RunResults, read_run

if TYPE_CHECKING:
    from engine.llm import LLM
    from writeup.literature import Literature


def chosen_idea(run: RunResults, idea: str | None) -> IdeaResults:
    """The idea to write about: `idea`, or the run's only one."""
    if not run.ideas:
        raise ConfigError(f"{run.run_dir}: no stage of the run has finished yet; nothing to write about")
    if idea is None:
        if len(run.ideas) > 1:
            raise ConfigError(
                f"{run.run_dir} holds several ideas ({', '.join(run.ideas)}); choose one with --idea NAME"
            )
        idea = next(iter(run.ideas))
    if idea not in run.ideas:
        raise ConfigError(
            f"--idea {idea!r}: the run has no finished stage for it; ideas: {', '.join(run.ideas)}"
        )
    return run.ideas[idea]


def open_paper(
    run_dir: Path,
    idea: str | None,
    cfg: WriteupConfig,
    sandbox: str = "local",
    sandbox_options: dict[str, Any] | None = None,
    run: RunResults | None = None,
) -> Paper:
    run = run or read_run(run_dir)
    results = chosen_idea(run, idea)
    paper_dir = run_dir / PAPER_DIR / results.name
    paper_dir.mkdir(parents=True, exist_ok=True)
    provider = get_provider(sandbox, **(sandbox_options or {}))
    ledger = build_ledger(results, cfg.test, cfg.alpha)
    ledger.write(paper_dir)
    macros = build_macros(run, results, ledger)
    return Paper(run, results, cfg, provider, macros, paper_dir, WriteupLog(paper_dir / LOG_FILE))


def write_paper(
    run_dir: Path,
    idea: str | None = None,
    *,
    cfg: WriteupConfig | None = None,
    llm: LLM | None = None,
    literature: Literature | None = None,
    sandbox: str = "local",
    sandbox_options: dict[str, Any] | None = None,
) -> Path:
    """Write one idea's paper; returns the path of paper.pdf. Offline (templates) unless `llm`
    is given and `cfg.offline` is not true. An idea with no best node in any stage gets the
    failure report instead (writeup/failure_report.py), offline."""
    cfg = cfg or WriteupConfig()
    run = read_run(run_dir)

    chosen = chosen_idea(run, idea)
    if not has_result(chosen):
        return write_failure_report(run_dir, run, chosen, cfg, sandbox, sandbox_options)
    paper = open_paper(run_dir, chosen.name, cfg, sandbox, sandbox_options, run)
    offline = cfg.offline is True or llm is None
    paper.log("start", idea=paper.idea.name, template=cfg.template, offline=offline, sandbox=sandbox)
    started = time.monotonic()
    (paper.dir / "results.tex").write_text(paper.macros.tex())
    if offline:
        from writeup.offline import report

        paper.figures, origin = make_figures(paper.idea, paper.macros, paper.dir, paper.provider)
        paper.log("figures", origin=origin, files=[f.name for f in paper.figures])
        version = paper.try_version(
            report(paper.run, paper.idea, paper.macros, paper.figures, cfg.template), "", "offline"
        )
    else:
        assert llm is not None
        version = _llm_paper(paper, cfg, llm, literature)
    return finish(paper, version, started)


def _llm_paper(paper: Paper, cfg: WriteupConfig, llm: LLM, literature: Literature | None) -> Version:
    """The LLM writer's paper; the offline report, said so in the log, when nothing it drafted
    compiled or it failed before any version (budget spent, provider down, a context too small)."""
    from engine.llm import LLMError
    from writeup.llm_writer import LLMWriter
    from writeup.offline import report

    drafted: Version | None = None
    why = ""
    try:
        drafted = LLMWriter(paper, llm, literature).write()
    except LLMError as e:  # keep the best version, else write the report
        paper.log("llm_failed", error=str(e)[:500])
        why = str(e)
    if paper.best is not None:
        return drafted or paper.best
    if drafted is not None:  # no fix fitted the model, or none repaired the draft
        why = "no version the LLM writer drafted compiled: " + "; ".join(
            str(e) for e in drafted.compiled.errors[:2]
        )
    paper.log(FALLBACK_STEP, why=why[:300])
    paper.figures, _ = make_figures(paper.idea, paper.macros, paper.dir, paper.provider)
    return paper.try_version(
        report(paper.run, paper.idea, paper.macros, paper.figures, cfg.template), "", "offline-fallback"
    )
