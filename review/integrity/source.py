"""A Silva paper's text as a reader sees it, from its LaTeX source: results.tex macros expanded to
their printed values, and each `\\claim{id}` kept as a marker, so a comparison sentence names the
ledger claim it states without guessing. Papers without results.tex are read from the PDF."""

from __future__ import annotations

import re
from pathlib import Path

from engine.claimtext import IDEA_SECTION, plain
from review.paper import Paper

RESULTS_FILE = "results.tex"
_NEWCOMMAND = re.compile(r"\\(?:newcommand|providecommand)\{\\([A-Za-z]+)\}(?:\[\d\])?\{(.*)\}\s*$")
_WRAPPERS = re.compile(
    r"\\(?:textbf|emph|textit|texttt|ensuremath|mathrm|text|caption|section\*?|subsection\*?)\{"
)


def results_macros(paper_dir: Path) -> dict[str, str]:
    """Macro name -> its LaTeX body, from the results.tex beside the paper ({} without one)."""
    path = paper_dir / RESULTS_FILE
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(errors="replace").splitlines():
        m = _NEWCOMMAND.match(line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def macro_numbers(macros: dict[str, str]) -> list[float]:
    """Every number a macro prints (a p-value's mantissa and exponent too)."""
    out: list[float] = []
    for body in macros.values():
        out += [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", body)]
    return out


def reading_text(paper: Paper) -> tuple[str, bool]:
    """(text, from_source): the expanded LaTeX of a Silva paper (results.tex beside it), else the
    PDF text."""
    macros = results_macros(paper.out_dir)
    if macros and paper.source:
        body = paper.source
        start, end = body.find("\\begin{document}"), body.find("\\end{document}")
        body = body[start if start >= 0 else 0 : end if end >= 0 else len(body)]  # the appendix too
        return plain(IDEA_SECTION.sub("", body), macros), True
    return paper.text, False
