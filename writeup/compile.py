"""TeX in the sandbox: latexmk with no shell escape and paranoid file access, chktex, pdftotext,
pdfinfo and pdftoppm, each one `exec` in Silva's sandbox on the paper's build directory.

kpathsea reads `openin_any`/`openout_any`/`shell_escape` from the environment, so `p` there
makes TeX refuse absolute paths, `..` and dot files for reads and writes alike (`\\input{/etc/passwd}`
fails), even with the `none` provider; the local sandbox does not even show the host's /etc.
latexmk runs with `-norc`: a latexmkrc is Perl, and nothing in a paper directory may run code.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.base import ExecResult, Limits, SandboxProvider

TEX_ENV = {"openin_any": "p", "openout_any": "p", "shell_escape": "f"}
progress = logging.getLogger("silva.progress")  # one line per compile (docs/llm.md, Progress)
LATEXMK = [
    "latexmk",
    "-pdf",
    "-norc",
    "-interaction=nonstopmode",
    "-halt-on-error",
    "-file-line-error",
    "-no-shell-escape",
]
BODY_END_LABEL = "silvabodyend"  # the templates put \label{silvabodyend} before the references
TOOLS = ("latexmk", "pdflatex", "bibtex", "chktex", "pdftotext", "pdftoppm", "pdfinfo")

_FILE_LINE = re.compile(r"^(?:\./)?([^\s:]+\.(?:tex|sty|cls|bbl|aux)):(\d+): (.+)$")
_BANG = re.compile(r"^! (.+)$")
_LINE_NO = re.compile(r"^l\.(\d+)")
_UNDEF = re.compile(r"(Citation|Reference) `([^']+)' on page \d+ undefined on input line (\d+)")


@dataclass(frozen=True)
class TexIssue:
    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"


@dataclass
class CompileResult:
    ok: bool
    pdf: Path | None
    errors: list[TexIssue] = field(default_factory=list)
    warnings: list[TexIssue] = field(default_factory=list)
    log_tail: str = ""
    wall_s: float = 0.0
    pages: int = 0
    body_pages: int = 0
    timed_out: bool = False


class TexBox:
    """The TeX tools on one build directory through one sandbox provider."""

    def __init__(
        self, provider: SandboxProvider, build_dir: Path, wall_s: float = 120.0, memory_mb: int = 2048
    ) -> None:
        self.provider = provider
        self.build_dir = build_dir
        self.limits = Limits(
            wall_s=wall_s, memory_mb=memory_mb, processes=64, file_size_mb=256, output_bytes=200_000
        )

    def exec(self, command: Sequence[str], files: Mapping[str, bytes] | None = None) -> ExecResult:
        box = self.provider.open(self.build_dir)
        try:
            return box.exec(command, limits=self.limits, files=files, env=TEX_ENV)
        finally:
            box.close()

    def compile(self, main: str = "paper.tex") -> CompileResult:
        stem = Path(main).stem
        pdf = self.build_dir / f"{stem}.pdf"
        pdf.unlink(missing_ok=True)  # a stale PDF must never pass for this compile's output
        started = time.monotonic()
        res = self.exec([*LATEXMK, main])
        wall = time.monotonic() - started
        log_path = self.build_dir / f"{stem}.log"
        log = log_path.read_text(errors="replace") if log_path.is_file() else ""
        errors, warnings = parse_log(log, main)
        ok = res.ok and pdf.is_file()
        if not ok and not errors:
            reason = "timed out" if res.timed_out else f"latexmk exited {res.exit_code}"
            errors = [TexIssue(main, None, f"{reason}: {(res.stdout + res.stderr)[-600:].strip()}")]
        result = CompileResult(
            ok=ok,
            pdf=pdf if ok else None,
            errors=errors,
            warnings=warnings,
            log_tail=log[-3000:],
            wall_s=wall,
            timed_out=res.timed_out,
        )
        if ok:
            result.pages = self.page_count(pdf.name)
            result.body_pages = body_pages(self.build_dir / f"{stem}.aux") or result.pages
        progress.info(
            "compiled %s in %.1f s: %s",
            main,
            wall,
            f"{result.pages} pages" if ok else f"failed, {len(errors)} errors (first: {errors[0]})",
        )
        return result

    def page_count(self, pdf_name: str) -> int:
        res = self.exec(["pdfinfo", pdf_name])
        m = re.search(r"^Pages:\s+(\d+)", res.stdout, re.MULTILINE)
        return int(m.group(1)) if m else 0

    def chktex(self, main: str = "paper.tex") -> list[TexIssue]:
        # -q: no banner; -I0: do not follow \input (results.tex is generated); format file:line:message.
        # Off: style nits a writer cannot act on usefully (space after commands, dash lengths,
        # interword/intersentence spacing, spaces before parentheses or labels).
        quiet = [f"-n{n}" for n in (1, 8, 12, 13, 24, 36)]
        res = self.exec(["chktex", "-q", "-I0", *quiet, "-f", "%f:%l: %m\n", main])
        issues = []
        for line in res.stdout.splitlines():
            m = re.match(r"^([^:]+):(\d+): (.+)$", line)
            if m:
                issues.append(TexIssue(m.group(1), int(m.group(2)), "chktex: " + m.group(3)))
        return issues

    def text(self, pdf_name: str = "paper.pdf") -> str:
        res = self.exec(["pdftotext", "-layout", pdf_name, "-"])
        return res.stdout

    def render(self, pdf_name: str = "paper.pdf", dpi: int = 60, prefix: str = "page") -> list[Path]:
        for old in self.build_dir.glob(f"{prefix}-*.png"):
            old.unlink()
        self.exec(["pdftoppm", "-png", "-r", str(dpi), pdf_name, prefix])
        return sorted(self.build_dir.glob(f"{prefix}-*.png"))


def parse_log(log: str, main: str) -> tuple[list[TexIssue], list[TexIssue]]:
    """Errors with file and line (from -file-line-error lines, or `! ...` with its `l.NN`) and
    the warnings a writer can act on (undefined citations and references)."""
    errors: list[TexIssue] = []
    warnings: list[TexIssue] = []
    lines = log.splitlines()
    for i, line in enumerate(lines):
        m = _FILE_LINE.match(line)
        if m:
            errors.append(TexIssue(m.group(1), int(m.group(2)), m.group(3).strip()))
            continue
        m = _BANG.match(line)
        if m:
            lineno = next((int(n.group(1)) for n in map(_LINE_NO.match, lines[i + 1 : i + 12]) if n), None)
            issue = TexIssue(main, lineno, m.group(1).strip())
            if not any(e.message == issue.message for e in errors):
                errors.append(issue)
            continue
        m = _UNDEF.search(line)
        if m:
            warnings.append(TexIssue(main, int(m.group(3)), f"{m.group(1)} `{m.group(2)}' undefined"))
    return errors, warnings


def body_pages(aux: Path) -> int:
    """The page the body ends on, from the label the templates set before the references."""
    if not aux.is_file():
        return 0
    m = re.search(
        r"\\newlabel\{" + BODY_END_LABEL + r"\}\{\{[^{}]*\}\{(\d+)\}", aux.read_text(errors="replace")
    )
    return int(m.group(1)) if m else 0
