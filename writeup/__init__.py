"""From a finished run to a compiled, checked PDF: results macros and statistics, figures drawn in
the sandbox, LaTeX templates, citations from verified sources, sandboxed compile-and-fix, the
number checker. `write_paper(run_dir)` with no LLM writes the offline results report."""

from writeup.config import WriteupConfig
from writeup.job import WriteupJob
from writeup.paper import write_paper
from writeup.preflight import preflight

__all__ = ["WriteupConfig", "WriteupJob", "preflight", "write_paper"]
