"""Sandboxes started ahead of need: each for one attempt, its interpreter already importing.

A fresh sandbox's interpreter spends about a second (1 s at load 1, 5 s at load 40 on 2 cores)
importing numpy and matplotlib before an experiment does its own work, all of it inside the
attempt's slot. A provider with `prestart: N` keeps N sandboxes per process started beside the
running ones, each exactly as an attempt's own (its namespaces, leased uid, a fresh empty
workspace, the same /tmp size and environment), whose interpreter has imported
`prestart_imports` and waits, on a pipe, for the code it is to run. An attempt's first exec of
`python script.py ...` or `python -c code ...` takes one whose start matched its own: the
waiting workspace is renamed onto the attempt's (empty) one, the order (arguments and the
attempt's rlimits) goes down the pipe, and the interpreter sets the rlimits on itself before it
compiles a line of the attempt's code. Nothing is ever reused: a sandbox runs one attempt's
code or is closed unused (after `IDLE_S`, or at exit). No slot is held while one waits: its
start and imports cost CPU beside the slots, not slot time. The `local` provider starts bwrap
with the order on a pipe; `docker` a container whose stdin carries it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import queue
import re
import shutil
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)

IDLE_S = 120.0  # a sandbox started but not taken for this long is closed: its run has moved on
_REAP_S = 5.0
_STOP_S = 60.0  # how long an exit waits for a sandbox being started, to close it
PYTHON = re.compile(r"python(\d+(\.\d+)?)?")  # an interpreter's name: python, python3, python3.11
STAGING = ".silva-prestart"  # folder of waiting workspaces, beside the attempts' node folders

# The interpreter's program: say it runs, where there is a pipe to say it on (until then bwrap
# may still be resolving the waiting workspace's path, which a take renames; a container has
# mounted it once the engine started it), import quietly (the attempt's own imports then find
# the modules loaded, and none of their import warnings), move what the imports made out of the
# collector's sight (gc.freeze: the full collections of the interpreter's exit took 1.1 s with
# matplotlib.pyplot loaded, 0.09 s frozen, at load 7), wait for the order (on stdin, stdin is
# then /dev/null, as in a cold start), set the attempt's rlimits, then run the attempt's code as
# `python` would: in __main__, with its argv, sys.path[0] and traceback (this frame dropped).
LAUNCHER = r"""
import os, sys
if sys.argv[2] != "-":
    os.write(int(sys.argv[2]), b"r")  # running: bwrap has bound the waiting workspace, it may move
    os.close(int(sys.argv[2]))


def _silva_wait(fd, modules):
    import contextlib, gc, importlib, io, json, os, resource, warnings
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in modules:
                try:
                    importlib.import_module(name)
                except Exception:
                    pass  # the attempt's own import meets the same error
    gc.freeze()
    with os.fdopen(fd, "rb") as pipe:
        order = pipe.read()
    if fd == 0:
        os.open(os.devnull, os.O_RDONLY)  # the lowest free descriptor: stdin again
    if not order:
        os._exit(0)  # closed unused
    order = json.loads(order)
    for name, value in order["rlimits"]:
        resource.setrlimit(getattr(resource, name), (value, value))
    return order["argv"]


def _silva_run(argv):
    import __main__, builtins, io, os, sys
    from importlib.machinery import SourceFileLoader
    namespace = __main__.__dict__
    namespace.clear()
    namespace.update(__name__="__main__", __doc__=None, __package__=None, __spec__=None)
    namespace["__builtins__"] = builtins
    if argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        filename, source = "<string>", argv[1]
    else:
        sys.argv = list(argv)
        filename = os.path.abspath(argv[0])
        sys.path[0] = os.path.dirname(filename)
        try:
            with io.open_code(filename) as f:
                source = f.read()
        except OSError as e:
            print(f"{sys.orig_argv[0]}: can't open file {filename!r}: [Errno {e.errno}] {e.strerror}",
                  file=sys.stderr)
            sys.exit(2)
        loader = SourceFileLoader("__main__", filename)
        namespace.update(__file__=filename, __cached__=None, __loader__=loader)
    try:
        exec(compile(source, filename, "exec", dont_inherit=True), namespace)
    except SystemExit:
        raise
    except BaseException as e:
        tb = e.__traceback__.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        sys.exit(1)


_silva_run(_silva_wait(int(sys.argv[1]), [m for m in sys.argv[3].split(",") if m]))
"""


class PrestartOptions(BaseModel):
    """The options of a provider that starts sandboxes ahead of need."""

    prestart: int = Field(
        default=0,
        ge=0,
        description="sandboxes kept started per process, each for one attempt, its interpreter waiting "
        "with `prestart_imports` imported (sandbox/prestart.py); 0: off",
    )
    prestart_imports: list[str] = Field(
        default_factory=lambda: ["numpy", "matplotlib.pyplot"],
        description="modules a started sandbox's interpreter imports while it waits",
    )


def launcher(python: str, go_fd: int, ready_fd: int | None, modules: Sequence[str]) -> list[str]:
    """The command of a sandbox started ahead of need: `python` saying on pipe `ready_fd` (if
    any) that it runs, then waiting for its order on `go_fd` (a pipe, or 0: stdin) until EOF."""
    ready = "-" if ready_fd is None else str(ready_fd)
    return [python, "-c", LAUNCHER, str(go_fd), ready, ",".join(modules)]


def order(command: Sequence[str], rlimits: Sequence[tuple[str, int]]) -> bytes:
    """What a waiting interpreter reads: the arguments after `python` and the rlimits it sets on
    itself first."""
    return json.dumps({"argv": list(command[1:]), "rlimits": [list(r) for r in rlimits]}).encode()


def runnable(command: Sequence[str]) -> bool:
    """Whether a waiting interpreter can run `command`: `python script [args]` or `python -c code
    [args]` (other interpreter options change how it starts; other programs are no Python)."""
    if len(command) < 2 or not PYTHON.fullmatch(os.path.basename(command[0])):
        return False
    return (command[1] == "-c" and len(command) >= 3) or not command[1].startswith("-")


@dataclass(frozen=True)
class Shape:
    """What a sandbox fixes when it starts, so an attempt can take it only if its own is equal."""

    python: str
    tmp_mb: int
    env: tuple[tuple[str, str], ...]
    gpu_ids: tuple[int, ...]
    staging: str  # waiting workspaces' folder: on the attempts' filesystem, so a rename moves one
    limits: tuple[int | None, ...] = ()  # limits fixed when it starts (a container's cgroup)


def staging_folder(workspace: Path) -> Path:
    """Where sandboxes for attempts like the one on `workspace` wait: beside its parent (a run's
    `nodes/<node>/attempt-N` -> `nodes/.silva-prestart/<host>-<pid>`), owned by this process."""
    return workspace.parent.parent / STAGING / f"{socket.gethostname()}-{os.getpid()}"


def sweep(staging: Path) -> None:
    """Remove the waiting workspaces that processes of this host left when they died (killed
    before their exit closed them): those of a live process, or of another host, stay."""
    host = socket.gethostname()
    for folder in staging.glob(f"{host}-*") if staging.is_dir() else ():
        pid = folder.name.removeprefix(f"{host}-")
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Started(Protocol):
    @property
    def workspace(self) -> Path: ...  # the waiting workspace its sandbox sees

    def alive(self) -> bool: ...

    def running(self) -> bool: ...  # its mounts are made: the waiting workspace may be renamed

    def release(self) -> None: ...  # taken: its process goes, its workspace is the attempt's

    def close(self) -> None: ...  # closed unused: its process and its waiting workspace go


S = TypeVar("S", bound=Started)


class Pool(Generic[S]):
    """Up to `size` started sandboxes per shape, started by one long-lived thread: a sandbox
    dies with the thread that started it (bwrap's --die-with-parent), and a job's thread may end
    before the sandbox it started is taken."""

    def __init__(self, size: int, start: Callable[[Shape, Path], S], idle_s: float = IDLE_S) -> None:
        self.size, self._start, self.idle_s = size, start, idle_s
        self._waiting: dict[Shape, deque[tuple[float, S]]] = {}
        self._pending: dict[Shape, int] = {}
        self._lock = threading.Lock()
        self._orders: queue.Queue[Shape | None] = queue.Queue()  # None: stop
        self._thread: threading.Thread | None = None
        self._count = 0
        self._closed = False
        self.taken = self.started = 0  # for the bench and the tests
        atexit.register(self.close)

    def take(self, shape: Shape) -> S | None:
        """A live sandbox started for `shape` (the oldest), or None; then one more is started."""
        found: S | None = None
        with self._lock:
            waiting = self._waiting.get(shape, deque())
            while waiting and found is None:
                _, box = waiting.popleft()
                if box.alive():
                    found = box
                else:
                    box.close()
            self.taken += found is not None
        self.want(shape)
        return found

    def settled(self) -> bool:
        """Whether every sandbox ordered is started (or failed to start)."""
        with self._lock:
            return not any(self._pending.values())

    def want(self, shape: Shape) -> None:
        """Keep `size` sandboxes of `shape` started (or starting)."""
        with self._lock:
            have = len(self._waiting.get(shape, ())) + self._pending.get(shape, 0)
            for _ in range(self.size - have):
                self._pending[shape] = self._pending.get(shape, 0) + 1
                self._orders.put(shape)
            if self._thread is None and have < self.size:
                self._thread = threading.Thread(target=self._serve, name="silva-prestart", daemon=True)
                self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                shape = self._orders.get(timeout=_REAP_S)
            except queue.Empty:
                self._reap()
                continue
            if shape is None or self._closed:
                return
            box = self._started(shape)
            with self._lock:
                self._pending[shape] -= 1
                if box is not None and self._closed:
                    box.close()  # started while the process was exiting
                elif box is not None:
                    self._waiting.setdefault(shape, deque()).append((time.monotonic(), box))
                    self.started += 1
            self._reap()

    def _started(self, shape: Shape) -> S | None:
        self._count += 1
        folder = Path(shape.staging)
        try:
            if not folder.is_dir():
                sweep(folder.parent)
            folder.mkdir(parents=True, exist_ok=True)
            return self._start(shape, folder / str(self._count))
        except Exception as e:  # an attempt then starts its own sandbox, as without a pool
            log.warning("could not start a sandbox ahead of need: %s", e)
            return None

    def _reap(self) -> None:
        now, old = time.monotonic(), []
        with self._lock:
            for waiting in self._waiting.values():
                while waiting and now - waiting[0][0] > self.idle_s:
                    old.append(waiting.popleft()[1])
        for box in old:
            box.close()

    def close(self) -> None:
        """Close every waiting sandbox and remove their folders, for good (at exit), once the
        sandbox being started (if any) is closed too: a container would outlive the process."""
        with self._lock:
            self._closed = True
        self._orders.put(None)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=_STOP_S)
        with self._lock:
            boxes = [box for waiting in self._waiting.values() for _, box in waiting]
            folders = {shape.staging for shape in self._waiting}
            self._waiting.clear()
        for box in boxes:
            box.close()
        for folder in folders:
            with contextlib.suppress(OSError):
                shutil.rmtree(folder)
                os.rmdir(Path(folder).parent)  # the run's staging folder, once no process uses it


def take(pool: Pool[S], shape: Shape, workspace: Path) -> S | None:
    """A sandbox started for `shape` whose waiting workspace is renamed onto the attempt's (still
    empty) `workspace`, or None: the attempt starts its own."""
    started = pool.take(shape)
    if started is None:
        return None
    if not started.running():
        started.close()
        return None
    try:
        os.rename(started.workspace, workspace)  # replaces the empty directory
    except OSError:
        started.close()  # files were written first, or another filesystem: start fresh
        return None
    return started


@contextlib.contextmanager
def released_on_error(started: Started | None) -> Iterator[None]:
    """Stop a taken sandbox if what follows (writing the attempt's files) fails: its process
    must not outlive the attempt it was given to."""
    try:
        yield
    except BaseException:
        if started is not None:
            started.release()
        raise
