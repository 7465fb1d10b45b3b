"""A fake Semantic Scholar Graph API on 127.0.0.1: `/graph/v1/paper/search` over a few records,
optionally answering 429 (with Retry-After) to the first requests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

RECORDS = [
    {
        "paperId": "a1b2",
        "title": "Random Features for Large-Scale Kernel Machines",
        "year": 2007,
        "venue": "NeurIPS",
        "authors": [{"name": "Ali Rahimi"}, {"name": "Benjamin Recht"}],
        "externalIds": {"DOI": "10.5555/2981562.2981710"},
        "abstract": "Random features approximate shift-invariant kernels.",
        "citationCount": 4000,
        "publicationTypes": ["Conference"],
        "url": "https://example.org/a1b2",
    },
    {
        "paperId": "c3d4",
        "title": "Very Sparse Random Projections",
        "year": 2006,
        "venue": "KDD",
        "authors": [{"name": "Ping Li"}, {"name": "Trevor J. Hastie"}, {"name": "Kenneth W. Church"}],
        "externalIds": {},
        "abstract": "Sparse projections preserve distances.",
        "citationCount": 900,
        "publicationTypes": ["Conference"],
        "url": "https://example.org/c3d4",
    },
]


class FakeS2:
    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first
        self.requests: list[dict[str, list[str]]] = []
        self.headers: list[dict[str, str]] = []


@contextmanager
def fake_s2(fail_first: int = 0) -> Iterator[tuple[str, FakeS2]]:
    state = FakeS2(fail_first)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:  # http.server's name
            url = urlparse(self.path)
            query = parse_qs(url.query)
            state.requests.append(query)
            state.headers.append(dict(self.headers))
            if len(state.requests) <= state.fail_first:
                self._send(429, {"message": "Too Many Requests"}, {"Retry-After": "0"})
                return
            if url.path != "/graph/v1/paper/search":
                self._send(404, {"error": "not found"})
                return
            limit = int(query.get("limit", ["10"])[0])
            self._send(200, {"total": len(RECORDS), "offset": 0, "data": RECORDS[:limit]})

        def _send(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
