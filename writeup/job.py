"""Papers as jobs: the writeup of one idea runs through the engine's `Executor` like any attempt,
so a forest's papers are written in parallel on the same workers and through the same gateway
(the `LLM` client pickles to a handle), and the run's dollar budget covers them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.node import AttemptResult
from writeup.config import WriteupConfig
from writeup.files import FAILURE_FILE, paper_kind

if TYPE_CHECKING:
    from engine.llm import LLM


@dataclass
class WriteupJob:
    """`node_id`: the id under which the executor tracks this job (e.g. `paper:<idea>`)."""

    node_id: str
    attempt: int
    run_dir: Path
    idea: str
    cfg: WriteupConfig = field(default_factory=WriteupConfig)
    llm: LLM | None = None
    sandbox: str = "local"
    sandbox_options: dict[str, Any] = field(default_factory=dict)
    # Figures and LaTeX are CPU work, no experiment: the CPU pool runs it, never an experiment slot.
    holds_resources: bool = False
    cpu_pool: bool = True

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        import os

        from writeup.literature import LiteratureError, open_literature
        from writeup.paper import write_paper

        started = time.time()
        literature = None
        if self.llm is not None and self.cfg.offline is not True and self.cfg.literature.provider != "none":
            try:
                literature = open_literature(self.cfg.literature, os.environ)
            except LiteratureError:
                literature = None  # preflight already refused a run that needs it; a paper without citations
        pdf = write_paper(
            self.run_dir,
            self.idea,
            cfg=self.cfg,
            llm=self.llm,
            literature=literature,
            sandbox=self.sandbox,
            sandbox_options=self.sandbox_options,
        )
        paper_dir = pdf.parent
        # A failure report (no stage had a best node) says so in its reason and keeps its summary.
        failure = (paper_dir / FAILURE_FILE).is_file()
        names = ["paper.pdf", "paper.tex", "references.bib", "results.tex", "numbers.json", "writeup.jsonl"]
        return AttemptResult(
            status="good",
            reason=f"{paper_kind(pdf)} written: {pdf.relative_to(self.run_dir)}",
            artifacts=[
                str((paper_dir / n).relative_to(self.run_dir))
                for n in names + ([FAILURE_FILE] if failure else [])
            ],
            workspace=str(paper_dir.relative_to(self.run_dir)),
            started_at=started,
            finished_at=time.time(),
        )
