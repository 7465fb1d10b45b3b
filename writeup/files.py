"""Where a writeup's files live: the names the writer, the failure report, the run's phases and
the CLI share. Imports nothing of Silva's, so any of them can read a run's papers cheaply."""

import json
from pathlib import Path

PAPER_DIR = "paper"  # RUN_DIR/paper/<idea>/
LOG_FILE = "writeup.jsonl"
FALLBACK_STEP = "offline_fallback"  # the LLM writer failed before any version: the offline report stands in
# Beside paper.pdf when the paper is a failure report (writeup/failure_report.py): the report's
# data, and the mark the review phase and the CLI know it by.
FAILURE_FILE = "failure.json"


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


def paper_kind(pdf: Path) -> str:
    """What a run's lines and the writeup node's reason call a paper: a failure report (an idea
    with no result, docs/writeup.md), the offline report that stood in for a failed LLM writer,
    or a paper."""
    if (pdf.parent / FAILURE_FILE).is_file():
        return "failure report"
    why = fallback_reason(pdf.parent)
    return "paper" if why is None else f"offline report (the LLM writer failed: {why})"
