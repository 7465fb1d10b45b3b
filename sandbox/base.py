"""The sandbox contract: limits, results, the provider registry.

Every piece of untrusted code in Silva (experiments, plot scripts, LaTeX) runs through a
`Sandbox` opened by a `SandboxProvider` on one fresh per-attempt workspace directory.
"""

from __future__ import annotations

import difflib
import errno
import importlib
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

READ_CAP = 64 * 2**20  # default cap of `read_file`: Silva never reads more of a workspace file
TRUNCATION_MARKER = "\n[... silva: output truncated after {limit} bytes ...]\n"


class SandboxUnavailable(RuntimeError):
    """The provider cannot isolate code on this machine; the message says why and what to do."""


class Limits(BaseModel):
    """Hard limits for one `exec`. None means "no limit" for that resource."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wall_s: float = Field(default=600.0, gt=0, description="deadline; the whole process tree is killed")
    cpu_s: int | None = Field(default=None, gt=0, description="CPU seconds (RLIMIT_CPU)")
    memory_mb: int | None = Field(default=4096, gt=0, description="address space / cgroup memory")
    processes: int | None = Field(default=256, gt=0, description="max processes for the sandbox user")
    file_size_mb: int | None = Field(default=1024, gt=0, description="largest single file (RLIMIT_FSIZE)")
    disk_mb: int | None = Field(default=None, gt=0, description="workspace disk quota and /tmp size")
    output_bytes: int = Field(default=1_000_000, gt=0, description="cap per stream on captured stdout/stderr")
    kill_grace_s: float = Field(default=2.0, ge=0, description="SIGTERM to SIGKILL grace period")


class ExecResult(BaseModel):
    """What one command did. Output beyond the cap is cut and ends with TRUNCATION_MARKER."""

    exit_code: int | None  # None when killed at the deadline; death by signal N is 128 + N
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    oom_killed: bool = False
    disk_exceeded: bool = False  # stopped because the workspace outgrew Limits.disk_mb
    wall_s: float = 0.0
    cpu_s: float = 0.0
    files: list[str] = Field(default_factory=list, description="workspace-relative paths after exec")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not (self.timed_out or self.oom_killed or self.disk_exceeded)


@runtime_checkable
class Sandbox(Protocol):
    """One isolated view of one workspace. Only `workspace` is writable from inside."""

    workspace: Path

    def exec(
        self,
        command: Sequence[str],
        *,
        limits: Limits,
        files: Mapping[str, bytes] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult: ...

    def read_file(self, path: str, *, max_bytes: int = ...) -> bytes: ...

    def write_file(self, path: str, data: bytes) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class SandboxProvider(Protocol):
    name: str

    def check(self) -> None:
        """Raise SandboxUnavailable (with a fix in the message) if this provider cannot run here."""

    def open(self, workspace: Path, *, gpu_ids: Sequence[int] = ()) -> Sandbox: ...


ProviderFactory = Callable[..., SandboxProvider]
ENTRY_POINTS = "silva.sandbox_providers"  # another package's providers (docs/sandbox.md, "Providers")
_BUILTIN = ("sandbox.docker_provider", "sandbox.local", "sandbox.none")


class NoOptions(BaseModel):
    """The options of a provider that takes none: any key is an error."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Registered:
    factory: ProviderFactory  # called with the options as keyword arguments
    options: type[BaseModel]  # validated when a config loads (sandbox/config.py)


_REGISTRY: dict[str, Registered] = {}
_loaded = False

P = TypeVar("P", bound=type)


def register_provider(name: str, factory: ProviderFactory, options: type[BaseModel] = NoOptions) -> None:
    _REGISTRY[name] = Registered(factory, options)


def sandbox_provider(name: str, *, options: type[BaseModel] = NoOptions) -> Callable[[P], P]:
    """Class decorator: the provider class is registered as `name`, built with its `options`."""

    def register(cls: P) -> P:
        register_provider(name, cls, options)
        return cls

    return register


def _registry() -> dict[str, Registered]:
    # Importing a provider module registers it (docker's SDK is only imported on first use);
    # an entry point's value is a module or a decorated class, registered as it loads.
    global _loaded
    if not _loaded:
        _loaded = True
        for module in _BUILTIN:
            importlib.import_module(module)
        for ep in entry_points(group=ENTRY_POINTS):
            ep.load()
    return _REGISTRY


def provider_names() -> list[str]:
    return sorted(_registry())


def _registered(name: str) -> Registered:
    try:
        return _registry()[name]
    except KeyError:
        raise SandboxUnavailable(
            f"unknown sandbox provider {name!r}; available: {', '.join(provider_names())} "
            f"(a package adds one by an entry point in the {ENTRY_POINTS!r} group)"
        ) from None


def option_problems(name: str, options: Mapping[str, Any]) -> list[str]:
    """What is wrong with provider `name` and its `options`, one line per problem."""
    try:
        model = _registered(name).options
    except SandboxUnavailable as e:
        return [str(e)]
    try:
        model.model_validate(options)
    except ValidationError as e:
        valid = ", ".join(model.model_fields) or "none"
        return [_option_problem(name, err, valid) for err in e.errors()]
    return []


def _option_problem(name: str, err: Any, valid: str) -> str:
    where = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        near = difflib.get_close_matches(str(err["loc"][-1]), valid.split(", "), n=1, cutoff=0.6)
        if near:
            return f"{where}: the {name} sandbox has no such option; did you mean `{near[0]}`?"
        return f"{where}: the {name} sandbox has no such option (its options: {valid})"
    if err["type"] == "missing":
        return f"{where}: {err['msg']}"
    return f"{where} = {err['input']!r}: {err['msg']}"


def get_provider(name: str, **options: Any) -> SandboxProvider:
    return _registered(name).factory(**options)


class FileTooLarge(OSError):
    """`read_file` of a file over its `max_bytes` cap (nothing is read into memory)."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"{size} bytes, over the {limit}-byte read cap", path)
        self.size, self.limit = size, limit


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """Map a workspace-relative path to the host, refusing escapes (.., absolute, symlinks out).

    The one confinement check for every path an experiment names (artifacts, plots, figures),
    in every search mode: symlinks are resolved first, so a link to a host file is refused."""
    root = workspace.resolve()
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise ValueError(f"path {path!r} escapes the workspace {workspace}")
    return target


def workspace_file(workspace: Path, path: str) -> str | None:
    """`path` as a normalized workspace-relative name when it is a regular file inside the
    workspace (after resolving symlinks), else None: what may be kept as an artifact."""
    try:
        target = resolve_in_workspace(workspace, path)
    except (ValueError, OSError):
        return None
    if not stat.S_ISREG(_lstat_mode(target)):
        return None
    return str(target.relative_to(workspace.resolve()))


def kept_artifacts(workspace: Path, rel: Path, names: Iterable[str]) -> list[str]:
    """The named files to keep from an attempt, as `rel/<normalized name>`, sorted and unique:
    names outside the workspace (`../`, absolute, symlinks out) and non-files are dropped."""
    kept = {workspace_file(workspace, name) for name in names}
    return sorted(str(rel / k) for k in kept if k is not None)


def _lstat_mode(path: Path) -> int:
    try:
        return path.lstat().st_mode
    except OSError:
        return 0


def _allows(st: os.stat_result, user: tuple[int, int], want: int) -> bool:
    """Whether `user` (uid, gid; no supplementary groups, as the sandbox clears them) has the
    `want` bits (os.R_OK | os.W_OK | os.X_OK) on a file with these owner and mode bits."""
    uid, gid = user
    if st.st_uid == uid:
        bits = st.st_mode >> 6
    elif st.st_gid == gid:
        bits = st.st_mode >> 3
    else:
        bits = st.st_mode
    return bits & want == want


class HostWorkspace:
    """Files in and out of a workspace directory on the host, shared by every provider (Docker
    bind-mounts the same directory). A provider whose code runs as another user overrides
    `_hand_over` to give that user each path Silva creates."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        workspace.mkdir(parents=True, exist_ok=True)

    def _hand_over(self, path: str) -> None:
        """Make a path inside the workspace usable by the sandboxed user (nothing by default)."""

    def _sandbox_user(self) -> tuple[int, int] | None:
        """(uid, gid) the sandboxed code runs as, when Silva's host process is another user (root):
        file access is then checked against that user's permissions. None: the same user, whose
        permissions the host's own open() already applies."""
        return None

    def _hand_over_tree(self) -> None:
        for dirpath, dirnames, filenames in os.walk(self.workspace):
            for name in (dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)):
                self._hand_over(name)

    def _stage(self, files: Mapping[str, bytes] | None) -> None:
        for path, data in (files or {}).items():
            self.write_file(path, data)

    def read_file(self, path: str, *, max_bytes: int = READ_CAP) -> bytes:
        """The file's bytes. FileNotFoundError, IsADirectoryError, PermissionError (the sandboxed
        user could not read it, or it is not a regular file: a FIFO would block the host),
        FileTooLarge over `max_bytes`, ValueError for a path outside the workspace."""
        target = resolve_in_workspace(self.workspace, path)
        self._check_access(target, path, os.R_OK)
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such file in the workspace", path) from None
        with os.fdopen(fd, "rb") as f:
            mode, size = os.fstat(fd).st_mode, os.fstat(fd).st_size
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", path)
            if not stat.S_ISREG(mode):
                raise PermissionError(errno.EACCES, "not a regular file (FIFO, socket or device)", path)
            if size > max_bytes:
                raise FileTooLarge(path, size, max_bytes)
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:  # grew after the stat
            raise FileTooLarge(path, len(data), max_bytes)
        return data

    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a file (parents made as needed). IsADirectoryError, PermissionError
        where the sandboxed user could not write it, ValueError outside the workspace."""
        target = resolve_in_workspace(self.workspace, path)
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        self._check_access(target, path, os.W_OK)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        root = self.workspace.resolve()
        for p in (target, *target.parents):  # the file and any directory created for it
            if p == root:
                break
            self._hand_over(str(p))

    def _check_access(self, target: Path, path: str, want: int) -> None:
        """Apply the sandboxed user's permissions to a host-side access by another (root) user:
        search on each directory from the workspace down, then `want` on the file, or write on
        the deepest existing directory when the file is yet to be created."""
        user = self._sandbox_user()
        if user is None:
            return
        root = self.workspace.resolve()
        node = root
        for part in target.relative_to(root).parts:
            st = node.stat()
            if not _allows(st, user, os.X_OK):
                raise PermissionError(
                    errno.EACCES, "the sandboxed user cannot enter a directory on this path", path
                )
            if not (node / part).exists():
                if want == os.W_OK and not _allows(st, user, os.W_OK):
                    raise PermissionError(errno.EACCES, "the sandboxed user cannot create files here", path)
                return
            node = node / part
        if not _allows(node.stat(), user, want):
            verb = "read" if want == os.R_OK else "write"
            raise PermissionError(errno.EACCES, f"the sandboxed user may not {verb} this file", path)


def list_files(workspace: Path) -> list[str]:
    root = workspace.resolve()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink())
