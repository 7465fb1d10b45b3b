"""`silva view --serve` and `silva run --view`: the run's view on http://127.0.0.1, rebuilt while
the run goes on; the page polls `version.json` and redraws itself when the run changed.

Only the view and the nodes' files (plots, artifacts) are served, only on the loopback address.
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from engine.eventlog import EVENTS_FILE
from engine.llm.ledger import LEDGER_FILE
from silva.view.build import VIEW_DIR, build_view

log = logging.getLogger(__name__)
HOST = "127.0.0.1"
SERVED = (f"/{VIEW_DIR}/", "/nodes/")  # path prefixes a request may read


class _Handler(SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/", f"/{VIEW_DIR}", f"/{VIEW_DIR}/"):
            self.send_response(302)
            self.send_header("Location", f"/{VIEW_DIR}/index.html")
            self.end_headers()
            return
        if not path.startswith(SERVED) or ".." in path:
            self.send_error(404, "not part of the run's view")
            return
        super().do_GET()

    def end_headers(self) -> None:
        # The page and its data change while the run goes on: never let the browser keep a copy.
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("view: " + format, *args)


class ViewServer:
    """Serves RUN_DIR's view and rebuilds it whenever the event log or the LLM ledger grows."""

    def __init__(self, run_dir: Path, port: int = 0, interval_s: float = 2.0) -> None:
        self.run_dir, self.interval_s = run_dir, interval_s
        self.httpd = ThreadingHTTPServer((HOST, port), partial(_Handler, directory=str(run_dir)))
        self._stop = threading.Event()
        self._seen: tuple[tuple[int, int], ...] = ()
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.httpd.server_address[1]}/{VIEW_DIR}/index.html"

    def _stamp(self) -> tuple[tuple[int, int], ...]:
        out = []
        for name in (EVENTS_FILE, LEDGER_FILE):
            try:
                st = (self.run_dir / name).stat()
                out.append((st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                out.append((0, 0))
        return tuple(out)

    def refresh(self) -> bool:
        """Rebuild if the run changed since the last build; whether it did."""
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        build_view(self.run_dir)
        self._seen = stamp
        return True

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.refresh()
            except Exception as e:  # a bad moment (a config being rewritten) must not end the view
                log.warning("view of %s not rebuilt: %s", self.run_dir, e)

    def start(self) -> ViewServer:
        self.refresh()
        for target in (self.httpd.serve_forever, self._watch):
            t = threading.Thread(target=target, name=f"silva-view-{target.__name__}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> ViewServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        # A final build, so the page left on disk shows the run's last state.
        try:
            self.refresh()
        finally:
            self.stop()
