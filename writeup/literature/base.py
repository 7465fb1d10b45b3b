"""The literature vocabulary: a `Paper` record, the `Literature` protocol every provider meets,
and BibTeX generated from a record (never typed by a model)."""

from __future__ import annotations

import re
import threading
import time
import unicodedata
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field


class LiteratureError(RuntimeError):
    """A provider failed for good (after its retries) or cannot be used; the message says why."""


class Paper(BaseModel):
    """One verified record, as its provider returned it."""

    id: str = Field(description="provider-qualified id, e.g. s2:<paperId>, openalex:W123, bib:<key>")
    title: str
    authors: list[str] = Field(default_factory=list, description="display names, in order")
    year: int | None = None
    venue: str = ""
    doi: str | None = None
    arxiv: str | None = None
    url: str | None = None
    abstract: str = ""
    citations: int | None = None
    kind: str = Field("article", description="article | inproceedings | misc")
    source: str = Field(description="the provider that returned it")
    key: str | None = Field(None, description="a citation key chosen by the user's .bib, kept as is")

    def summary(self) -> str:
        """One line for an LLM choosing papers."""
        who = (
            self.authors[0].split()[-1] + (" et al." if len(self.authors) > 1 else "")
            if self.authors
            else "?"
        )
        cited = f", cited {self.citations}" if self.citations is not None else ""
        return f"[{self.id}] {who} ({self.year or 'n.d.'}). {self.title}. {self.venue}{cited}"


@runtime_checkable
class Literature(Protocol):
    name: str

    def search(self, query: str, limit: int = 10) -> list[Paper]: ...

    def check(self) -> None:
        """Raise LiteratureError (what is wrong, how to fix) unless searches can work."""


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


_STOP = {
    "a",
    "an",
    "the",
    "on",
    "of",
    "for",
    "in",
    "to",
    "and",
    "with",
    "via",
    "is",
    "are",
    "by",
    "from",
    "at",
}


def cite_key(paper: Paper) -> str:
    """`lastname` + year + first content word of the title, e.g. `rahimi2007random`."""
    if paper.key:
        return paper.key
    last = re.sub(r"[^a-z]", "", _ascii(paper.authors[0].split()[-1]).lower()) if paper.authors else "anon"
    words = [w for w in re.findall(r"[a-z]+", _ascii(paper.title).lower()) if w not in _STOP]
    return f"{last or 'anon'}{paper.year or ''}{words[0] if words else 'paper'}"


_BIB_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "~": r"\~{}", "^": r"\^{}"}


def bib_escape(text: str) -> str:
    """A field value safe inside braces: TeX specials escaped, braces balanced by removal."""
    raw = " ".join(text.split()).replace("{", "").replace("}", "").replace("\\", "")
    return "".join(_BIB_SPECIAL.get(ch, ch) for ch in raw)


def bibtex(paper: Paper, key: str | None = None) -> str:
    """A BibTeX entry built from the provider's record."""
    key = key or cite_key(paper)
    fields: list[tuple[str, str]] = [("title", "{" + bib_escape(paper.title) + "}")]
    if paper.authors:
        fields.append(("author", " and ".join(bib_escape(a) for a in paper.authors)))
    if paper.year:
        fields.append(("year", str(paper.year)))
    if paper.venue:
        fields.append(("booktitle" if paper.kind == "inproceedings" else "journal", bib_escape(paper.venue)))
    if paper.doi:
        fields.append(("doi", bib_escape(paper.doi)))
    if paper.arxiv:
        fields += [("eprint", bib_escape(paper.arxiv)), ("archiveprefix", "arXiv")]
    if paper.url and not paper.doi:
        fields.append(("url", paper.url.replace("%", r"\%")))
    kind = paper.kind if paper.kind in ("article", "inproceedings") and paper.venue else "misc"
    if kind == "misc" and paper.venue:
        fields.append(("howpublished", bib_escape(paper.venue)))
        fields = [f for f in fields if f[0] not in ("journal", "booktitle")]
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@{kind}{{{key},\n{body}\n}}\n"


class RateLimiter:
    """At most `per_s` requests a second from this client, shared by its threads."""

    def __init__(self, per_s: float) -> None:
        self.interval = 1.0 / per_s
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            time.sleep(delay)
