"""From a finished run to a compiled, checked PDF: results macros and statistics, figures drawn in
the sandbox, LaTeX templates, citations from verified sources, sandboxed compile-and-fix, the
number checker. `write_paper(run_dir)` with no LLM writes the offline results report."""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "WriteupConfig": "writeup.config",
    "WriteupJob": "writeup.job",
    "write_paper": "writeup.paper",
    "preflight": "writeup.preflight",
}
__all__ = ["WriteupConfig", "WriteupJob", "preflight", "write_paper"]


def __getattr__(name: str) -> Any:
    """Loaded on first use: reading a run config (`silva status`) imports writeup.config, and
    must not pay for scipy and matplotlib, which the paper writer needs."""
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'writeup' has no attribute {name!r}")
