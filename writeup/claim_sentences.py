"""Comparison sentences of a draft that contradict their claim in the ledger, with where they are
in the .tex: the LLM writer sends them back in a reflection round, and the sentences still wrong
after the last round are removed before the final compile. The reading of a sentence is the
reviewer's own (engine/claimtext.py), so a paper that passes here passes the reviewer's check."""

from __future__ import annotations

import re

from pydantic import BaseModel

from engine.claimnames import Resolver
from engine.claimtext import ABBREVIATED, IDEA_SECTION, check_text, plain
from writeup.results import ResultsMacros

# A sentence ends at . ! ? before a space or its \claim{id}, or at a blank line.
_BOUNDARY = re.compile(ABBREVIATED + r"[.!?](?=\s|\\claim|$)(?:\\claim\{[A-Za-z0-9-]+\})?|\n\s*\n")
# Floats and tables are no prose: their spans are blanked before splitting, never removed.
_FLOATS = re.compile(r"\\begin\{(table|figure|tabular)\*?\}.*?\\end\{\1\*?\}", re.DOTALL)


class Contradiction(BaseModel):
    start: int
    end: int
    sentence: str
    claim_id: str | None
    problems: list[str]

    def issue(self) -> str:
        claim = f"claim {self.claim_id}" if self.claim_id else "the ledger"
        return (
            f'the sentence "{self.sentence}" contradicts {claim}: {"; ".join(self.problems)}. '
            "State the ledger's verdict (with \\claim{id}) or remove the sentence."
        )


def _body(tex: str) -> tuple[int, int]:
    start = tex.find("\\begin{abstract}")
    start = start if start >= 0 else max(tex.find("\\begin{document}"), 0)
    end = tex.find("\\end{document}")
    return start, end if end >= 0 else len(tex)


def _prose(tex: str) -> str:
    """`tex` with its floats and the idea's own section blanked (same length)."""
    blanked = _FLOATS.sub(lambda m: " " * len(m.group(0)), tex)
    return IDEA_SECTION.sub(lambda m: " " * len(m.group(0)), blanked)


def sentence_spans(tex: str) -> list[tuple[int, int]]:
    """(start, end) of each prose sentence of the abstract, body and appendix, a \\claim{id} included."""
    lo, hi = _body(tex)
    blanked = _prose(tex)[lo:hi]
    out, start = [], 0
    for m in [*_BOUNDARY.finditer(blanked), None]:
        end = m.end() if m else len(blanked)
        span = blanked[start:end]
        if span.strip():
            out.append((lo + start + len(span) - len(span.lstrip()), lo + end))
        start = end
    return out


def contradictions(tex: str, macros: ResultsMacros) -> list[Contradiction]:
    bodies = {name: m.latex for name, m in macros.macros.items()}
    names = Resolver(macros.ledger)
    names.define(plain(tex, bodies))  # the abbreviations the whole paper defines
    out = []
    prose = _prose(tex)
    for start, end in sentence_spans(tex):
        checks = [c for c in check_text(plain(prose[start:end], bodies), macros.ledger, names) if c.problems]
        if checks:
            out.append(
                Contradiction(
                    start=start,
                    end=end,
                    sentence=" ".join(tex[start:end].split()),
                    claim_id=checks[0].claim.id if checks[0].claim else None,
                    problems=[p for c in checks for p in c.problems],
                )
            )
    return out


def remove_contradictions(tex: str, found: list[Contradiction]) -> str:
    for c in sorted(found, key=lambda c: c.start, reverse=True):
        tex = tex[: c.start] + tex[c.end :].lstrip(" ")
    return tex
