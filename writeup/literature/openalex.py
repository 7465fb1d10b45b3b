"""OpenAlex: `GET /works?search=...` (the `mailto` parameter joins the polite pool)."""

from __future__ import annotations

from typing import Any

from writeup.literature.base import Paper
from writeup.literature.http import HttpSource

BASE_URL = "https://api.openalex.org"


class OpenAlex:
    name = "openalex"

    def __init__(self, http: HttpSource, mailto: str | None = None) -> None:
        self.http = http
        self.mailto = mailto

    def search(self, query: str, limit: int = 10) -> list[Paper]:
        params: dict[str, Any] = {"search": query, "per-page": limit}
        if self.mailto:
            params["mailto"] = self.mailto
        data = self.http.get_json("/works", params)
        return [p for p in (_paper(r) for r in data.get("results") or []) if p is not None]

    def check(self) -> None:
        self.search("machine learning", limit=1)


def _abstract(index: dict[str, list[int]] | None) -> str:
    """OpenAlex ships abstracts as an inverted index: word -> positions."""
    if not index:
        return ""
    words = sorted((pos, word) for word, positions in index.items() for pos in positions)
    return " ".join(w for _, w in words)


def _paper(r: dict[str, Any]) -> Paper | None:
    title = r.get("display_name") or r.get("title")
    if not r.get("id") or not title:
        return None
    source = (r.get("primary_location") or {}).get("source") or {}
    doi = (r.get("doi") or "").removeprefix("https://doi.org/") or None
    return Paper(
        id="openalex:" + str(r["id"]).rsplit("/", 1)[-1],
        title=title,
        authors=[
            a["author"]["display_name"]
            for a in r.get("authorships") or []
            if (a.get("author") or {}).get("display_name")
        ],
        year=r.get("publication_year"),
        venue=source.get("display_name") or "",
        doi=doi,
        url=r.get("id"),
        abstract=_abstract(r.get("abstract_inverted_index")),
        citations=r.get("cited_by_count"),
        kind="inproceedings" if source.get("type") == "conference" else "article",
        source="openalex",
    )
