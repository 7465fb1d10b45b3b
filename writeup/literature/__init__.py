"""The literature client: one interface over Semantic Scholar, OpenAlex and a user's .bib.

lit = open_literature(cfg.writeup.literature, os.environ)
papers = lit.search("random Fourier features kernel approximation", limit=10)
entry = bibtex(papers[0])          # from the provider's record, never typed by a model
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from writeup.config import LiteratureConfig
from writeup.literature.base import Literature, LiteratureError, Paper, bibtex, cite_key


def open_literature(
    cfg: LiteratureConfig, env: Mapping[str, str] = os.environ, backoff_s: float = 1.0
) -> Literature:
    if cfg.provider == "offline_bib":
        from writeup.literature.offline_bib import OfflineBib

        if cfg.bib_file is None:
            raise LiteratureError(
                "literature.provider = 'offline_bib' needs literature.bib_file: the path of your .bib"
            )
        return OfflineBib(cfg.bib_file)
    if cfg.provider == "none":
        raise LiteratureError("literature.provider = 'none': no literature client is configured")
    from writeup.literature.http import HttpSource

    common = {
        "requests_per_s": cfg.requests_per_s,
        "max_retries": cfg.max_retries,
        "timeout_s": cfg.timeout_s,
        "backoff_s": backoff_s,
    }
    if cfg.provider == "openalex":
        from writeup.literature.openalex import BASE_URL as OA_URL
        from writeup.literature.openalex import OpenAlex

        return OpenAlex(HttpSource(cfg.base_url or OA_URL, headers={}, **common), cfg.mailto)  # type: ignore[arg-type]
    from writeup.literature.semantic_scholar import BASE_URL, SemanticScholar

    headers: dict[str, str] = {}
    if cfg.api_key_env:
        key = env.get(cfg.api_key_env)
        if not key:
            raise LiteratureError(f"literature.api_key_env = {cfg.api_key_env!r}: that variable is not set")
        headers["x-api-key"] = key
    return SemanticScholar(HttpSource(cfg.base_url or BASE_URL, headers=headers, **common))  # type: ignore[arg-type]


__all__ = ["Literature", "LiteratureError", "Paper", "bibtex", "cite_key", "open_literature"]
