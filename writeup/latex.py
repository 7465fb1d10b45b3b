"""Rendering the paper skeleton (jinja2 with LaTeX-safe delimiters) and small LaTeX helpers."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).parent / "templates"
STYLE_FILES = ("silva-base.sty", "silva-workshop.sty", "silva-conference.sty")

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    block_start_string="((*",
    block_end_string="*))",
    variable_start_string="(((",
    variable_end_string=")))",
    comment_start_string="((=",
    comment_end_string="=))",
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


@dataclass
class Section:
    title: str
    body: str
    label: str = ""

    def __post_init__(self) -> None:
        self.label = self.label or re.sub(r"[^a-z]+", "-", self.title.lower()).strip("-")


def render_paper(
    *,
    template: str,
    title: str,
    author: str,
    abstract: str,
    sections: list[Section],
    cite: bool,
    appendix: list[Section] | None = None,
) -> str:
    return _ENV.get_template("paper.tex.j2").render(
        template=template,
        title=title,
        author=author,
        date=time.strftime("%B %Y"),
        abstract=abstract,
        sections=sections,
        cite=cite,
        appendix=appendix or [],
    )


def style_files() -> dict[str, bytes]:
    return {name: (TEMPLATES / name).read_bytes() for name in STYLE_FILES}


def cite_keys(tex: str) -> list[str]:
    keys: list[str] = []
    for m in re.finditer(r"\\cite[a-z]*\*?(?:\[[^\]]*\])*\{([^{}]*)\}", tex):
        keys += [k.strip() for k in m.group(1).split(",") if k.strip()]
    return keys


def drop_cites(tex: str, bad: set[str]) -> str:
    """Remove unresolved keys from every \\cite; a \\cite left empty goes with its leading space."""

    def fix(m: re.Match[str]) -> str:
        keep = [k.strip() for k in m.group(2).split(",") if k.strip() and k.strip() not in bad]
        return f"{m.group(1)}{{{','.join(keep)}}}" if keep else ""

    tex = re.sub(r"(\\cite[a-z]*\*?(?:\[[^\]]*\])*)\{([^{}]*)\}", fix, tex)
    return re.sub(r"[ ~]+([.,;)])", r"\1", tex) if bad else tex


def latex_block(text: str) -> str | None:
    """The body of the longest ```latex (or ```tex) fenced block of an answer."""
    blocks = re.findall(r"```(?:latex|tex)\s*\n(.*?)(?:\n```|$)", text, re.DOTALL)
    return max(blocks, key=len) if blocks else None
