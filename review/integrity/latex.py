"""Checks read from the LaTeX source and log, or the PDF text when that is all there is:
undefined references and citations, overfull boxes, the page limit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from review.integrity.report import CheckResult, Finding
from review.paper import Paper

_COMMENT = re.compile(r"(?<!\\)%.*")
_CITE = re.compile(r"\\(?:no)?cite[a-zA-Z]*\*?(?:\[[^\]]*\]){0,2}\{([^}]*)\}")
_REF = re.compile(r"\\(?:ref|eqref|pageref|autoref|cref|Cref|vref|nameref)\*?\{([^}]*)\}")
LABEL = re.compile(r"\\label\{([^}]*)\}")
_BIBITEM = re.compile(r"\\bibitem(?:\[[^\]]*\])?\{([^}]*)\}")
_BIBFILES = re.compile(r"\\(?:bibliography|addbibresource)\{([^}]*)\}")
_BIBENTRY = re.compile(r"@\s*(?!comment|string|preamble)[a-zA-Z]+\s*\{\s*([^,\s]+)\s*,", re.IGNORECASE)
_LOG_UNDEFINED = re.compile(r"(Citation|Reference) [`']([^']*)' on page (\d+) undefined")
_OVERFULL = re.compile(r"Overfull \\[hv]box \(([\d.]+)pt too (?:wide|high)\) (.*?lines? [\d-]+)")
_MARKER = re.compile(r"\[\?+\]|\?\?")

OVERFULL_TOLERANCE_PT = 2.0  # smaller overflows are invisible in print


@dataclass(frozen=True)
class Source:
    """The paper's LaTeX, comments removed, with the keys it defines and uses."""

    text: str
    directory: Path

    @classmethod
    def of(cls, paper: Paper) -> Source | None:
        if paper.tex is None:
            return None
        text = "\n".join(_COMMENT.sub("", line) for line in paper.source.splitlines())
        return cls(text=text, directory=paper.tex.parent)

    @staticmethod
    def _keys(pattern: re.Pattern[str], text: str) -> list[str]:
        return [k.strip() for m in pattern.finditer(text) for k in m.group(1).split(",") if k.strip()]

    @property
    def cites(self) -> list[str]:
        return self._keys(_CITE, self.text)

    @property
    def refs(self) -> list[str]:
        return self._keys(_REF, self.text)

    @property
    def labels(self) -> set[str]:
        return set(self._keys(LABEL, self.text))

    def bib_keys(self) -> set[str] | None:
        """Keys of the bibliography, or None when the source names a .bib file that is missing."""
        keys = set(self._keys(_BIBITEM, self.text))
        for name in self._keys(_BIBFILES, self.text):
            path = self.directory / (name if name.endswith(".bib") else f"{name}.bib")
            if not path.is_file():
                return None
            keys |= {m.group(1) for m in _BIBENTRY.finditer(path.read_text(errors="replace"))}
        return keys


def undefined_references(paper: Paper) -> CheckResult:
    name = "undefined_references"
    src, log = Source.of(paper), paper.log
    findings: dict[tuple[str, str], Finding] = {}
    sources = []
    if src is not None:
        sources.append("LaTeX source")
        bib = src.bib_keys()
        if bib is None:
            findings[("bib", "")] = Finding(message="the .bib file named by \\bibliography is missing")
        else:
            for key in dict.fromkeys(src.cites):
                if key not in bib:
                    findings[("citation", key)] = Finding(
                        message=f"citation {key!r} is not in the bibliography", where=f"\\cite{{{key}}}"
                    )
        labels = src.labels
        for key in dict.fromkeys(src.refs):
            if key not in labels:
                findings[("reference", key)] = Finding(
                    message=f"reference {key!r} has no \\label", where=f"\\ref{{{key}}}"
                )
    if log is not None:
        sources.append("LaTeX log")
        for m in _LOG_UNDEFINED.finditer(log.read_text(errors="replace")):
            kind, key = m.group(1).lower(), m.group(2)
            findings.setdefault(
                (kind, key), Finding(message=f"{kind} {key!r} is undefined", where=f"page {m.group(3)}")
            )
    if not sources:
        if not paper.pages:
            return CheckResult.skipped(name, "no LaTeX source, log or PDF text")
        sources.append("PDF text ([?] and ?? markers)")
        for i, page in enumerate(paper.pages):
            for m in _MARKER.finditer(page):
                findings[("marker", f"{i}:{m.start()}")] = Finding(
                    message=f"unresolved reference or citation marker {m.group(0)!r}", where=f"page {i + 1}"
                )
    return CheckResult.of(name, list(findings.values()), "checked " + ", ".join(sources))


def overfull_boxes(paper: Paper) -> CheckResult:
    name = "overfull_boxes"
    log = paper.log
    if log is None:
        return CheckResult.skipped(name, "no LaTeX log beside the paper")
    findings = [
        Finding(message=f"overfull box, {float(m.group(1)):.1f} pt too wide", where=m.group(2).strip())
        for m in _OVERFULL.finditer(log.read_text(errors="replace"))
        if float(m.group(1)) > OVERFULL_TOLERANCE_PT
    ]
    return CheckResult.of(name, findings, f"{log.name}, boxes more than {OVERFULL_TOLERANCE_PT:g} pt over")


def page_limit(paper: Paper, limit: int | None) -> CheckResult:
    name = "page_limit"
    if limit is None:
        return CheckResult.skipped(name, "no page limit configured")
    if not paper.pages:
        return CheckResult.skipped(name, "no PDF to count pages in")
    main, total = paper.main_pages(), len(paper.pages)
    detail = f"{main} page(s) of main text (through the start of the references) of {total}; limit {limit}"
    findings = (
        [
            Finding(
                message=f"main text runs to page {main}, over the {limit}-page limit",
                where=f"pages {limit + 1}-{main}",
            )
        ]
        if main > limit
        else []
    )
    return CheckResult.of(name, findings, detail)
