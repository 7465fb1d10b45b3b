"""A user's .bib file as a provider: searched by word overlap, keys kept as the user wrote them."""

from __future__ import annotations

import re
from pathlib import Path

import bibtexparser

from writeup.literature.base import LiteratureError, Paper


def _clean(value: str) -> str:
    return " ".join(value.replace("{", "").replace("}", "").split())


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


class OfflineBib:
    name = "offline_bib"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._papers: list[Paper] | None = None

    def papers(self) -> list[Paper]:
        if self._papers is None:
            if not self.path.is_file():
                raise LiteratureError(f"literature.bib_file = {str(self.path)!r}: file not found")
            library = bibtexparser.parse_string(self.path.read_text(errors="replace"))
            self._papers = []
            for e in library.entries:
                f = {k.lower(): _clean(str(v.value)) for k, v in e.fields_dict.items()}
                if not f.get("title"):
                    continue
                year = re.search(r"\d{4}", f.get("year", ""))
                self._papers.append(
                    Paper(
                        id=f"bib:{e.key}",
                        key=e.key,
                        title=f["title"],
                        authors=[a.strip() for a in f.get("author", "").split(" and ") if a.strip()],
                        year=int(year.group()) if year else None,
                        venue=f.get("journal") or f.get("booktitle") or f.get("howpublished") or "",
                        doi=f.get("doi"),
                        arxiv=f.get("eprint"),
                        url=f.get("url"),
                        abstract=f.get("abstract", ""),
                        kind=e.entry_type.lower()
                        if e.entry_type.lower() in ("article", "inproceedings")
                        else "misc",
                        source=self.name,
                    )
                )
        return self._papers

    def search(self, query: str, limit: int = 10) -> list[Paper]:
        q = _words(query)
        scored = [
            (len(q & _words(f"{p.title} {p.abstract} {p.venue}")), i, p) for i, p in enumerate(self.papers())
        ]
        return [p for score, _, p in sorted(scored, key=lambda t: (-t[0], t[1])) if score > 0][:limit]

    def check(self) -> None:
        if not self.papers():
            raise LiteratureError(f"literature.bib_file = {str(self.path)!r}: no entry with a title")
