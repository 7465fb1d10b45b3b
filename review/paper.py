"""What is reviewed: a PDF, a LaTeX directory, or the papers of a run directory.

Text comes from the PDF with pypdf (or the LaTeX source when there is no PDF); page images come
from poppler's pdftoppm. A paper inside a run directory (RUN_DIR/paper/<idea>/) knows its run,
so the integrity checks can compare it with the run's artifacts.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from engine.errors import ConfigError
from engine.eventlog import EVENTS_FILE

PAPERS_DIR = "paper"  # RUN_DIR/paper/<idea>/paper.pdf, written by the writeup phase
MIN_PAGE_TEXT = 300  # characters of main text that make a page count as a page of text
REFERENCES_HEADING = re.compile(r"^\s*(?:\d+\s+)?(References|Bibliography)\s*$", re.MULTILINE | re.IGNORECASE)


@dataclass
class Paper:
    """One paper to review: its PDF and/or LaTeX source, where to write, and its run if any."""

    out_dir: Path
    pdf: Path | None = None
    tex: Path | None = None
    run_dir: Path | None = None
    idea: str | None = None
    _pages: list[str] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return str(self.pdf or self.tex)

    @property
    def log(self) -> Path | None:
        """The LaTeX log beside the source or the PDF (overfull boxes, undefined references)."""
        for base in (self.tex, self.pdf):
            if base is not None and base.with_suffix(".log").is_file():
                return base.with_suffix(".log")
        return None

    @cached_property
    def source(self) -> str:
        return self.tex.read_text(errors="replace") if self.tex is not None else ""

    @property
    def pages(self) -> list[str]:
        """Text of each PDF page ([] without a PDF)."""
        if self._pages is None:
            self._pages = pdf_pages(self.pdf) if self.pdf is not None else []
        return self._pages

    @property
    def text(self) -> str:
        return "\n\n".join(self.pages) if self.pages else self.source

    @property
    def title(self) -> str:
        m = re.search(r"\\title\{((?:[^{}]|\{[^{}]*\})*)\}", self.source)
        if m:
            return re.sub(r"\\\\|\s+", " ", m.group(1)).strip()
        first = next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")
        return first[:200] or self.name

    def main_pages(self) -> int:
        """Pages up to and including the one where the references start (all pages if none)."""
        for i, page in enumerate(self.pages):
            m = REFERENCES_HEADING.search(page)
            if m:
                # References opening a page (after a running header at most) end the text a page earlier.
                return i if len(page[: m.start()].strip()) < MIN_PAGE_TEXT else i + 1
        return len(self.pages)

    def page_images(self, count: int, dpi: int = 60) -> list[bytes]:
        """PNG renderings of the first `count` pages (small: enough to judge layout and figures)."""
        if self.pdf is None or count == 0:
            return []
        require_tools("pdftoppm")
        with tempfile.TemporaryDirectory(prefix="silva-review-") as tmp:
            subprocess.run(
                [
                    "pdftoppm",
                    "-png",
                    "-r",
                    str(dpi),
                    "-f",
                    "1",
                    "-l",
                    str(count),
                    str(self.pdf),
                    f"{tmp}/page",
                ],
                check=True,
                capture_output=True,
                timeout=120,
            )
            return [p.read_bytes() for p in sorted(Path(tmp).glob("page*.png"))]


def pdf_pages(pdf: Path) -> list[str]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        return [page.extract_text() or "" for page in PdfReader(pdf).pages]
    except (PdfReadError, OSError, ValueError) as exc:
        raise ConfigError(
            f"{pdf}: cannot read the PDF ({exc}); pass a valid PDF or its LaTeX directory"
        ) from None


def run_dir_of(path: Path) -> Path | None:
    """The run directory holding `path` (RUN_DIR/paper/<idea>/...), if any."""
    resolved = path.resolve()
    for parent in resolved.parents:
        if (parent / EVENTS_FILE).is_file() and resolved.is_relative_to(parent / PAPERS_DIR):
            return parent
    return None


def main_tex(directory: Path) -> Path | None:
    """The LaTeX file that holds \\documentclass: paper.tex or main.tex first, else the only one."""
    candidates = [
        p for p in sorted(directory.glob("*.tex")) if "\\documentclass" in p.read_text(errors="replace")
    ]
    for preferred in ("paper.tex", "main.tex"):
        if directory / preferred in candidates:
            return directory / preferred
    return candidates[0] if len(candidates) == 1 else None


def _paper_in(directory: Path) -> Paper | None:
    tex = main_tex(directory)
    pdf = tex.with_suffix(".pdf") if tex is not None else None
    if pdf is None or not pdf.is_file():
        pdfs = sorted(directory.glob("*.pdf"))
        pdf = (
            directory / "paper.pdf"
            if (directory / "paper.pdf").is_file()
            else (pdfs[0] if len(pdfs) == 1 else None)
        )
    if tex is None and pdf is None:
        return None
    run_dir = run_dir_of(directory)
    idea = directory.name if run_dir is not None else None
    return Paper(out_dir=directory, pdf=pdf, tex=tex, run_dir=run_dir, idea=idea)


def resolve(path: Path) -> list[Paper]:
    """The papers named by a command-line argument, or a ConfigError saying what was expected."""
    if not path.exists():
        raise ConfigError(
            f"{path}: no such file or directory; pass a PDF, a LaTeX directory or a run directory"
        )
    if path.is_file():
        if path.suffix.lower() != ".pdf":
            raise ConfigError(f"{path}: not a PDF; pass a PDF, a LaTeX directory or a run directory")
        directory = path.parent
        tex = path.with_suffix(".tex")
        run_dir = run_dir_of(path)
        return [
            Paper(
                out_dir=directory,
                pdf=path,
                tex=tex if tex.is_file() else None,
                run_dir=run_dir,
                idea=directory.name if run_dir is not None else None,
            )
        ]
    if (path / EVENTS_FILE).is_file():
        papers = [p for d in sorted((path / PAPERS_DIR).glob("*")) if d.is_dir() and (p := _paper_in(d))]
        if not papers:
            raise ConfigError(
                f"{path}: a run directory without papers (nothing in {path / PAPERS_DIR}/<idea>/); "
                "write them up first"
            )
        return papers
    paper = _paper_in(path)
    if paper is None:
        raise ConfigError(
            f"{path}: no PDF and no LaTeX file with \\documentclass here; pass a PDF, a LaTeX "
            "directory (one main .tex) or a run directory"
        )
    return [paper]


def require_tools(*names: str) -> None:
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        raise ConfigError(f"{', '.join(missing)} not found: install poppler-utils (`make system-deps`)")


def paragraph_chunks(text: str, size: int) -> list[str]:
    """`text` in parts of at most `size` characters: whole paragraphs packed in order, a paragraph
    longer than `size` cut into pieces; the blank lines between parts are dropped."""
    pieces = [p[i : i + size] for p in text.split("\n\n") for i in range(0, max(len(p), 1), size)]
    out: list[str] = []
    for piece in pieces:
        if out and len(out[-1]) + len(piece) + 2 <= size:
            out[-1] += "\n\n" + piece
        else:
            out.append(piece)
    return [c for c in out if c.strip()]
