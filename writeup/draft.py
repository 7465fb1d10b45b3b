"""A paper being written: its versions, each compiled in the sandbox and checked (numbers,
citations, claims), and the best one published to the paper directory atomically, so a failed
later round never deletes a good PDF. The LLM writer, the offline report and the failure report
all write through it."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.base import SandboxProvider
from writeup.claim_sentences import contradictions, remove_contradictions
from writeup.compile import CompileResult, TexBox, TexIssue
from writeup.config import WriteupConfig
from writeup.figures import Figure
from writeup.files import LOG_FILE
from writeup.latex import cite_keys, drop_cites, style_files
from writeup.numbers import NumberReport, artifact_values, check_pdf, check_tex, remove_untraced
from writeup.results import ResultsMacros
from writeup.run_reader import IdeaResults, RunResults


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
