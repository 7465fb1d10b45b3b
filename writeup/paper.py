"""From a run directory to RUN_DIR/paper/<idea>/: paper.tex, references.bib, results.tex,
figures/, paper.pdf, numbers.json and writeup.jsonl (every step, LLM call cost and compile).

Every compile happens in build/ through the sandbox; only a version that compiled, and scores
no worse than the best so far, is published to the paper directory (atomically), so a failed
later round never deletes a good PDF.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import ConfigError
from sandbox.base import SandboxProvider, get_provider
from writeup.claim_sentences import contradictions, remove_contradictions
from writeup.compile import CompileResult, TexBox, TexIssue
from writeup.config import WriteupConfig
from writeup.figures import Figure, make_figures
from writeup.latex import cite_keys, drop_cites, style_files
from writeup.ledger import build_ledger
from writeup.numbers import NumberReport, artifact_values, check_pdf, check_tex, remove_untraced
from writeup.results import ResultsMacros, build_macros
from writeup.run_reader import IdeaResults, RunResults, read_run

if TYPE_CHECKING:
    from engine.llm import LLM
    from writeup.literature import Literature

PAPER_DIR = "paper"
LOG_FILE = "writeup.jsonl"
FALLBACK_STEP = "offline_fallback"  # the LLM writer failed before any version: the offline report stands in


class WriteupLog:
    """writeup.jsonl: one JSON line per step, flushed as it happens."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, step: str, **data: Any) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps({"ts": time.time(), "step": step, **data}, default=str) + "\n")
            f.flush()


@dataclass
class Version:
    tex: str
    bib: str
    compiled: CompileResult
    numbers: NumberReport
    chktex: list[TexIssue] = field(default_factory=list)

    def score(self, page_limit: int) -> tuple[int, int, int]:
        over = max(0, self.compiled.body_pages - page_limit)
        return (len(self.numbers.untraced) + len(self.numbers.pdf_missing), over, len(self.chktex))


@dataclass
class Paper:
    """One paper being written: inputs, workspace, and the publish-if-better rule."""

    run: RunResults
    idea: IdeaResults
    cfg: WriteupConfig
    provider: SandboxProvider
    macros: ResultsMacros
    dir: Path
    log: WriteupLog
    figures: list[Figure] = field(default_factory=list)
    best: Version | None = None

    @property
    def build(self) -> Path:
        return self.dir / "build"

    @property
    def values(self) -> list[float]:
        return artifact_values(self.run, self.idea, self.macros)

    def texbox(self) -> TexBox:
        return TexBox(self.provider, self.build, self.cfg.compile.wall_s, self.cfg.compile.memory_mb)

    def try_version(self, tex: str, bib: str, round_: str) -> Version:
        """Compile `tex` in build/, check it, publish it when it compiled and is no worse."""
        shutil.rmtree(self.build, ignore_errors=True)
        files = {
            "paper.tex": tex.encode(),
            "references.bib": bib.encode(),
            "results.tex": self.macros.tex().encode(),
            **style_files(),
            **{f"figures/{f.name}": f.path.read_bytes() for f in self.figures},
        }
        box = self.texbox()
        box.exec(["true"], files=files)
        compiled = box.compile("paper.tex")
        numbers = check_tex(tex, self.macros, self.values)
        chk: list[TexIssue] = []
        if compiled.ok:
            numbers = check_pdf(numbers, box.text("paper.pdf"), self.macros)
            chk = box.chktex("paper.tex")
        version = Version(tex, bib, compiled, numbers, chk)
        self.log(
            "compile",
            round=round_,
            ok=compiled.ok,
            wall_s=round(compiled.wall_s, 3),
            pages=compiled.pages,
            body_pages=compiled.body_pages,
            errors=[str(e) for e in compiled.errors[:10]],
            untraced=[u.text for u in numbers.untraced],
            pdf_missing=numbers.pdf_missing,
            chktex=len(chk),
        )
        if compiled.ok and (
            self.best is None or version.score(self.cfg.page_limit) <= self.best.score(self.cfg.page_limit)
        ):
            self.publish(version)
        return version

    def publish(self, version: Version) -> None:
        assert version.compiled.pdf is not None
        for name, data in (
            ("paper.tex", version.tex.encode()),
            ("references.bib", version.bib.encode()),
            ("results.tex", self.macros.tex().encode()),
            ("paper.pdf", version.compiled.pdf.read_bytes()),
            ("numbers.json", version.numbers.model_dump_json(indent=2).encode()),
        ):
            tmp = self.dir / (name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, self.dir / name)
        self.best = version
        self.log("published", score=list(version.score(self.cfg.page_limit)), pages=version.compiled.pages)

    def finalize(self, version: Version, known_keys: set[str]) -> Version:
        """Last resort before the final compile: unresolved cites, untraced numbers and sentences that
        contradict their claim go."""
        tex = version.tex
        bad = {k for k in cite_keys(tex) if k not in known_keys}
        if bad:
            self.log("citations_removed", keys=sorted(bad))
            tex = drop_cites(tex, bad)
        untraced = check_tex(tex, self.macros, self.values).untraced
        if untraced:
            self.log("numbers_removed", numbers=[u.text for u in untraced])
            tex = remove_untraced(tex, untraced)
        wrong = contradictions(tex, self.macros)
        if wrong:  # sent back in the reflection rounds and still wrong: the sentence goes
            self.log(
                "claims_removed", sentences=[c.sentence for c in wrong], problems=[c.problems for c in wrong]
            )
            tex = remove_contradictions(tex, wrong)
        if tex == version.tex:
            return version
        return self.try_version(tex, version.bib, "final")


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
    from writeup.failure_report import has_result, write_failure_report  # it builds on this module

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

        paper.figures, origin = make_figures(paper.idea, paper.dir, paper.provider)
        paper.log("figures", origin=origin, files=[f.name for f in paper.figures])
        version = paper.try_version(
            report(paper.run, paper.idea, paper.macros, paper.figures, cfg.template), "", "offline"
        )
    else:
        from engine.llm import LLMError
        from writeup.llm_writer import LLMWriter
        from writeup.offline import report

        assert llm is not None
        try:
            version = LLMWriter(paper, llm, literature).write()
        except LLMError as e:  # budget spent, provider down: keep the best version, else write the report
            paper.log("llm_failed", error=str(e)[:500])
            if paper.best is None:
                paper.log(FALLBACK_STEP, why=str(e)[:300])
                paper.figures, _ = make_figures(paper.idea, paper.dir, paper.provider)
                version = paper.try_version(
                    report(paper.run, paper.idea, paper.macros, paper.figures, cfg.template),
                    "",
                    "offline-fallback",
                )
            else:
                version = paper.best
    return finish(paper, version, started)


def fallback_reason(paper_dir: Path) -> str | None:
    """Why the latest writeup in `paper_dir` published the offline report instead of the LLM
    writer's paper; None when it did not fall back."""
    log = paper_dir / LOG_FILE
    why = None
    for line in log.read_text().splitlines() if log.is_file() else []:
        entry = json.loads(line)
        if entry.get("step") == "start":
            why = None
        elif entry.get("step") == FALLBACK_STEP:
            why = str(entry.get("why", ""))
    return why


def finish(paper: Paper, version: Version, started: float) -> Path:
    """The end of a writeup: the published PDF's path, or an error when no version compiled."""
    if paper.best is None:
        errors = "; ".join(str(e) for e in version.compiled.errors[:5])
        paper.log("failed", errors=errors)
        raise RuntimeError(f"no version of the paper compiled ({paper.dir / LOG_FILE}): {errors}")
    shutil.rmtree(paper.build, ignore_errors=True)
    paper.log(
        "done",
        pdf=str(paper.dir / "paper.pdf"),
        wall_s=round(time.monotonic() - started, 3),
        numbers_ok=paper.best.numbers.ok,
    )
    return paper.dir / "paper.pdf"
