"""The number checker: every number in the abstract, the results and experiments sections,
tables and captions must be a results.tex macro or equal an artifact value at its printed
precision; the compiled PDF's text must show each macro the paper uses with its value.

Positions in the .tex are kept (ignored spans are blanked, never cut), so an untraced number
can be reported with its line and removed from the exact place it was typed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from pydantic import BaseModel, Field

from writeup.results import ResultsMacros
from writeup.run_reader import IdeaResults, RunResults

CHECKED_SECTIONS = re.compile(r"result|experiment|evaluation|finding", re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![A-Za-z_^\\\d.])(-|−)?(\d+(?:\.\d+)?)(?:\s*\\times\s*10\^\{?(-?\d+)\}?)?(\s*\\%|\s*%)?(?![A-Za-z\d])"
)
# Spans whose digits are markup, not claims: references, labels, citations, file names, sizes.
_IGNORED = re.compile(
    r"\\(?:ref|eqref|label|cite[tp]?|citeauthor|citeyear|input|include|includegraphics|bibliography"
    r"|begin\{tabular\*?\}|cmidrule|vspace|hspace|setlength|resizebox|scalebox|bibliographystyle)"
    r"\*?(?:\[[^\]]*\])?(?:\([^)]*\))?\{[^{}]*\}(?:\{[^{}]*\})?"
    r"|\[[^\]]*(?:width|height|scale|pt|em)[^\]]*\]"
    r"|\d*\.?\d+\\(?:linewidth|textwidth|columnwidth)"
    r"|\\\\\[[^\]]*\]"
    r"|(?<!\\)%.*"
)


class UntracedNumber(BaseModel):
    text: str
    line: int
    region: str
    context: str
    start: int = Field(description="character offset in the .tex")
    end: int
    bounds: tuple[int, int] = Field(description="the checked region it was found in")


class NumberReport(BaseModel):
    checked: int = 0
    from_macros: int = 0
    from_artifacts: int = 0
    untraced: list[UntracedNumber] = Field(default_factory=list)
    macros_used: list[str] = Field(default_factory=list)
    pdf_checked: int = 0
    pdf_missing: list[str] = Field(default_factory=list, description="macros whose value the PDF text lacks")

    @property
    def ok(self) -> bool:
        return not self.untraced and not self.pdf_missing

    def issues(self) -> list[str]:
        out = [
            f"paper.tex:{u.line}: the number {u.text!r} ({u.region}) matches no result of the run; "
            f"use a results.tex macro or remove it. Context: ...{u.context}..."
            for u in self.untraced
        ]
        out += [f"the PDF text does not show the value of \\{name}" for name in self.pdf_missing]
        return out


def artifact_values(run: RunResults, idea: IdeaResults, macros: ResultsMacros) -> list[float]:
    """Every number the run produced for this idea: stats, seeds, counts, settings, held-out."""
    values: list[float] = [run.total_nodes, run.good_nodes, run.buggy_nodes, run.replicates, run.seed]
    for s in idea.stages:
        values += [s.nodes, s.good, s.buggy]
        if s.best_value is not None:
            values.append(s.best_value)
        values += list(_numbers(s.best_params.values()))
        for per_metric in s.groups.values():
            for st in per_metric.values():
                values += [st.mean, st.std, st.n, *st.values]
    values += list(_numbers(idea.fixed_settings.values()))
    if idea.heldout:
        values += list(_numbers(idea.heldout.values()))
    values += [m.value for m in macros.macros.values() if m.value is not None]
    # The idea's own words (its hypothesis may say "30% label noise") are quoted, not results.
    quoted = " ".join((idea.title, idea.hypothesis, idea.abstract, idea.method_description))
    values += [float(x) for x in re.findall(r"(?<![\w.])\d+(?:\.\d+)?", quoted)]
    return [v for v in values if math.isfinite(v)]


def _numbers(items: Iterable[object]) -> Iterable[float]:
    for v in items:
        if isinstance(v, bool):
            continue
        if isinstance(v, int | float):
            yield float(v)


def regions(tex: str) -> list[tuple[str, int, int]]:
    """(name, start, end) of the checked parts of a .tex."""
    out: list[tuple[str, int, int]] = []
    for m in re.finditer(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", tex, re.DOTALL):
        out.append(("abstract", m.start(1), m.end(1)))
    heads = list(re.finditer(r"\\section\*?\{([^{}]*)\}", tex))
    stop = min(
        (i for i in (tex.find("\\label{silvabodyend}"), tex.find("\\end{document}")) if i >= 0),
        default=len(tex),
    )
    for i, h in enumerate(heads):
        if CHECKED_SECTIONS.search(h.group(1)) and h.end() < stop:
            end = heads[i + 1].start() if i + 1 < len(heads) else stop
            label = re.match(r"\s*\\label\{[^{}]*\}", tex[h.end() :])
            out.append((f"section '{h.group(1)}'", h.end() + (label.end() if label else 0), min(end, stop)))
    for m in re.finditer(r"\\begin\{tabular\*?\}.*?\\end\{tabular\*?\}", tex, re.DOTALL):
        out.append(("table", m.start(), m.end()))
    for m in re.finditer(r"\\caption\{", tex):
        depth, j = 1, m.end()
        while j < len(tex) and depth:
            depth += {"{": 1, "}": -1}.get(tex[j], 0) if tex[j - 1] != "\\" else 0
            j += 1
        out.append(("caption", m.end(), j - 1))
    return out


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def _matches(token: float, decimals: int, values: list[float], percent: bool) -> bool:
    tol = 0.5 * 10 ** (-decimals) + 1e-9
    for v in values:
        for cand in (v, abs(v), v * 100, abs(v) * 100) if percent else (v, abs(v)):
            if abs(cand - token) <= tol:
                return True
    return False


def check_tex(tex: str, macros: ResultsMacros, values: list[float]) -> NumberReport:
    report = NumberReport()
    names = sorted(macros.macros, key=len, reverse=True)
    macro_re = re.compile(r"\\(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z])") if names else None
    report.macros_used = sorted({m.group(1) for m in macro_re.finditer(tex)}) if macro_re else []
    seen: set[tuple[int, int]] = set()
    # Narrowest first: a number in a caption inside a results section belongs to the caption.
    for region, start, end in sorted(regions(tex), key=lambda r: r[2] - r[1]):
        chunk = _blank(tex[start:end], _IGNORED)
        if macro_re is not None:
            report.from_macros += len(macro_re.findall(chunk))
            chunk = _blank(chunk, macro_re)
        for m in _NUMBER.finditer(chunk):
            pos = (start + m.start(), start + m.end())
            if pos in seen:  # a caption inside a checked section is one number, not two
                continue
            seen.add(pos)
            report.checked += 1
            mantissa = float(m.group(2))
            decimals = len(m.group(2).split(".")[1]) if "." in m.group(2) else 0
            value = mantissa * 10 ** int(m.group(3)) if m.group(3) else mantissa
            if m.group(3):
                decimals = decimals - int(m.group(3))
            if m.group(1):
                value = -value
            if _matches(value, decimals, values, bool(m.group(4))):
                report.from_artifacts += 1
                continue
            line = tex.count("\n", 0, pos[0]) + 1
            context = " ".join(tex[max(0, pos[0] - 60) : pos[1] + 60].split())
            report.untraced.append(
                UntracedNumber(
                    text=m.group(0).strip(),
                    line=line,
                    region=region,
                    context=context,
                    start=pos[0],
                    end=pos[1],
                    bounds=(start, end),
                )
            )
    return report


def check_pdf(report: NumberReport, pdf_text: str, macros: ResultsMacros) -> NumberReport:
    flat = re.sub(r"\s+", "", pdf_text).replace("−", "-").replace("‐", "-")
    for name in report.macros_used:
        m = macros.macros[name]
        if m.value is None:
            continue
        report.pdf_checked += 1
        if re.sub(r"\s+", "", m.plain) not in flat:
            report.pdf_missing.append(name)
    return report


def remove_untraced(tex: str, untraced: list[UntracedNumber]) -> str:
    """The last resort after the reflection rounds: a table cell becomes '--'; elsewhere the
    sentence that typed the number goes."""
    for u in sorted(untraced, key=lambda u: u.start, reverse=True):
        if u.region == "table":
            tex = tex[: u.start] + "--" + tex[u.end :]
            continue
        lo, hi = u.bounds
        left = max([tex.rfind(b, lo, u.start) + 2 for b in (". ", ".\n", "\n\n")] + [lo])
        ends = [i + 1 for i in (tex.find(b, u.end, hi) for b in (". ", ".\n", "\n\n")) if i >= 0]
        right = min(ends) if ends else hi
        tex = tex[:left] + tex[right:].lstrip(" ")
    return tex
