"""A fake Semantic Scholar search on 127.0.0.1: returns the records sharing a word with the query."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

RECORDS: list[dict[str, Any]] = [
    {
        "paperId": "rff07",
        "title": "Random Features for Large-Scale Kernel Machines",
        "year": 2007,
        "venue": "NeurIPS",
        "authors": [{"name": "Ali Rahimi"}, {"name": "Benjamin Recht"}],
        "externalIds": {},
        "abstract": "Random features approximate shift-invariant kernels.",
        "citationCount": 4000,
    },
    {
        "paperId": "ls16",
        "title": "Rethinking the Inception Architecture",
        "year": 2016,
        "venue": "CVPR",
        "authors": [{"name": "Christian Szegedy"}],
        "externalIds": {},
        "abstract": "Introduces label smoothing.",
        "citationCount": 20000,
    },
    {
        "paperId": "cl09",
        "title": "Curriculum Learning",
        "year": 2009,
        "venue": "ICML",
        "authors": [{"name": "Yoshua Bengio"}],
        "externalIds": {},
        "abstract": "Easy examples first.",
        "citationCount": 5000,
    },
]


@contextmanager
def fake_literature() -> Iterator[tuple[str, list[str]]]:
    queries: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:  # http.server's name
            url = urlparse(self.path)
            query = parse_qs(url.query).get("query", [""])[0]
            queries.append(query)
            words = {w for w in query.lower().split() if len(w) > 3}
            hits = [r for r in RECORDS if words & set(r["title"].lower().split())]
            body = json.dumps({"total": len(hits), "data": hits}).encode()
            self.send_response(200 if url.path == "/graph/v1/paper/search" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", queries
    finally:
        server.shutdown()
        server.server_close()
