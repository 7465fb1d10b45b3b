"""Semantic Scholar's Graph API: `GET /graph/v1/paper/search` (optional `x-api-key` header)."""

from __future__ import annotations

from typing import Any

from writeup.literature.base import Paper
from writeup.literature.http import HttpSource

BASE_URL = "https://api.semanticscholar.org"
FIELDS = "paperId,title,authors,year,venue,externalIds,abstract,citationCount,url,publicationTypes"


class SemanticScholar:
    name = "semantic_scholar"

    def __init__(self, http: HttpSource) -> None:
        self.http = http

    def search(self, query: str, limit: int = 10) -> list[Paper]:
        data = self.http.get_json(
            "/graph/v1/paper/search", {"query": query, "limit": limit, "fields": FIELDS}
        )
        return [p for p in (_paper(r) for r in data.get("data") or []) if p is not None]

    def check(self) -> None:
        self.search("machine learning", limit=1)


def _paper(r: dict[str, Any]) -> Paper | None:
    if not r.get("paperId") or not r.get("title"):
        return None
    ids = r.get("externalIds") or {}
    types = r.get("publicationTypes") or []
    return Paper(
        id=f"s2:{r['paperId']}",
        title=r["title"],
        authors=[a["name"] for a in r.get("authors") or [] if a.get("name")],
        year=r.get("year"),
        venue=r.get("venue") or "",
        doi=ids.get("DOI"),
        arxiv=ids.get("ArXiv"),
        url=r.get("url"),
        abstract=r.get("abstract") or "",
        citations=r.get("citationCount"),
        kind="inproceedings" if "Conference" in types else "article",
        source="semantic_scholar",
    )
