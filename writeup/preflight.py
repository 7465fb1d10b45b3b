"""Before any LLM spend: is TeX usable in the sandbox, and the literature client reachable?
Users of earlier systems found a missing pdflatex only at the end, after paying for the run."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from sandbox.base import SandboxUnavailable, get_provider
from writeup.compile import TOOLS, TexBox
from writeup.config import WriteupConfig
from writeup.latex import style_files

PROBE = (
    "\\documentclass{article}\\usepackage{silva-workshop}\\begin{document}Silva preflight.\\end{document}\n"
)


def preflight(
    cfg: WriteupConfig,
    *,
    sandbox: str = "local",
    sandbox_options: dict[str, Any] | None = None,
    llm_writer: bool = True,
    env: Mapping[str, str] = os.environ,
) -> None:
    """Raise ConfigError naming every problem: missing TeX tools, a style that does not compile
    in the sandbox, a literature client that cannot answer (only when the LLM writer will cite)."""
    problems: list[str] = []
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        problems.append(
            f"writeup: {', '.join(missing)} not found; install TeX Live with `make system-deps` "
            "(texlive-latex-base, -latex-recommended, -fonts-recommended, -latex-extra, latexmk, chktex, "
            "poppler-utils)"
        )
    else:
        with tempfile.TemporaryDirectory(prefix="silva-tex-probe-") as tmp:
            try:
                box = TexBox(get_provider(sandbox, **(sandbox_options or {})), Path(tmp) / "build", wall_s=60)
                box.exec(["true"], files={"probe.tex": PROBE.encode(), **style_files()})
                result = box.compile("probe.tex")
            except SandboxUnavailable as e:
                problems.append(f"writeup: the {sandbox!r} sandbox cannot compile LaTeX here: {e}")
            else:
                if not result.ok:
                    problems.append(
                        "writeup: a one-line LaTeX document does not compile in the sandbox: "
                        + "; ".join(str(e) for e in result.errors[:3])
                    )
    if llm_writer and cfg.offline is not True and cfg.literature.provider != "none":
        from writeup.literature import LiteratureError, open_literature

        try:
            open_literature(cfg.literature, env).check()
        except LiteratureError as e:
            problems.append(
                f"writeup.literature ({cfg.literature.provider}): {e}; set writeup.literature.provider "
                "to another source (openalex, offline_bib with bib_file) or 'none' to write without citations"
            )
    if problems:
        raise ConfigError("the paper writer cannot run:\n  " + "\n  ".join(problems))
