"""What one `silva` command knows beyond its arguments: `-v`, and the run it works on, whose
RUN_DIR/silva.log receives everything the terminal shows (warnings and Ray's lines included,
without colour codes) and the stack trace of any failure (docs/cli.md).
"""

from __future__ import annotations

import io
import logging
import re
import sys
import traceback
from pathlib import Path
from typing import TextIO

LOG_FILE = "silva.log"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A live table redraws itself (cursor up, erase line): the log keeps its first form, not each redraw.
REDRAW = re.compile(r"\x1b\[\d*[AK]")


class RunLog:
    """RUN_DIR/silva.log, appended to; a log that cannot be written (a full disk) goes quiet."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOG_FILE
        self._file: TextIO | None = self.path.open("a", encoding="utf-8")

    def write(self, text: str) -> None:
        if self._file is None or REDRAW.search(text):
            return
        try:
            self._file.write(ANSI.sub("", text))
            self._file.flush()
        except OSError:
            self.close()

    def trace(self, exc: BaseException) -> None:
        self.write("".join(traceback.format_exception(exc)))

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None


class _Tee(io.TextIOBase):
    """A terminal stream that also writes to the run log; everything else is the stream's."""

    def __init__(self, stream: TextIO, log: RunLog) -> None:
        self.stream, self.log = stream, log

    def write(self, text: str) -> int:
        n = self.stream.write(text)
        self.log.write(text)
        return n

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding


class _LogHandler(logging.Handler):
    def __init__(self, log: RunLog) -> None:
        super().__init__(logging.NOTSET)
        self.log = log
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.log.write(self.format(record) + "\n")


class _Held(logging.Handler):
    """Log records of the command before its run directory exists (config checks, the sandbox
    warning), written to the run log when it opens."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + "\n")


class Session:
    def __init__(self) -> None:
        self.verbose = False
        self.run_dir: Path | None = None
        self.log: RunLog | None = None
        self._saved: tuple[TextIO, TextIO] | None = None
        self._handler: logging.Handler | None = None
        self._held: _Held | None = None

    def start(self) -> None:
        """Hold log records until a run directory is attached."""
        self._held = _Held()
        logging.getLogger().addHandler(self._held)

    def attach(self, run_dir: Path) -> None:
        """From now on the terminal's output and the logs also go to RUN_DIR/silva.log."""
        self.run_dir = run_dir
        held = self._drop_held()
        try:
            self.log = RunLog(run_dir)
        except OSError:  # a read-only or full run directory: the command itself will say so
            return
        for line in held:
            self.log.write(line)
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = _Tee(sys.stdout, self.log), _Tee(sys.stderr, self.log)
        self._handler = _LogHandler(self.log)
        logging.getLogger().addHandler(self._handler)

    def _drop_held(self) -> list[str]:
        if self._held is None:
            return []
        logging.getLogger().removeHandler(self._held)
        lines, self._held = self._held.lines, None
        return lines

    def detach(self) -> None:
        self._drop_held()
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved
            self._saved = None
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
            self._handler = None
        if self.log is not None:
            self.log.close()
        # The next command in this process (tests run several) starts clean.
        self.verbose, self.run_dir, self.log = False, None, None


SESSION = Session()
