"""Where a writeup's files live: the names the writer, the failure report, the run's phases and
the CLI share. Imports nothing, so any of them can read a run's papers cheaply."""

PAPER_DIR = "paper"  # RUN_DIR/paper/<idea>/
LOG_FILE = "writeup.jsonl"
FALLBACK_STEP = "offline_fallback"  # the LLM writer failed before any version: the offline report stands in
# Beside paper.pdf when the paper is a failure report (writeup/failure_report.py): the report's
# data, and the mark the review phase and the CLI know it by.
FAILURE_FILE = "failure.json"
