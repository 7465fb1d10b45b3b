"""The sandbox contract: limits, results, the provider registry.

Every piece of untrusted code in Silva (experiments, plot scripts, LaTeX) runs through a
`Sandbox` opened by a `SandboxProvider` on one fresh per-attempt workspace directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

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

    def read_file(self, path: str) -> bytes: ...

    def write_file(self, path: str, data: bytes) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class SandboxProvider(Protocol):
    name: str

    def check(self) -> None:
        """Raise SandboxUnavailable (with a fix in the message) if this provider cannot run here."""

    def open(self, workspace: Path, *, gpu_ids: Sequence[int] = ()) -> Sandbox: ...


ProviderFactory = Callable[..., SandboxProvider]
_REGISTRY: dict[str, ProviderFactory] = {}


def register_provider(name: str, factory: ProviderFactory) -> None:
    _REGISTRY[name] = factory


def provider_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def get_provider(name: str, **options: Any) -> SandboxProvider:
    _load_builtin()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise SandboxUnavailable(
            f"unknown sandbox provider {name!r}; available: {', '.join(sorted(_REGISTRY))}"
        ) from None
    return factory(**options)


def _load_builtin() -> None:
    # Importing a provider module registers it; docker's SDK is only imported on first use.
    from sandbox import docker_provider, local, none  # noqa: F401


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """Map a workspace-relative path to the host, refusing escapes (.., absolute, symlinks out)."""
    root = workspace.resolve()
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise ValueError(f"path {path!r} escapes the workspace {workspace}")
    return target


class HostWorkspace:
    """Files in and out of a workspace directory on the host, shared by every provider (Docker
    bind-mounts the same directory). A provider whose code runs as another user overrides
    `_hand_over` to give that user each path Silva creates."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        workspace.mkdir(parents=True, exist_ok=True)

    def _hand_over(self, path: str) -> None:
        """Make a path inside the workspace usable by the sandboxed user (nothing by default)."""

    def _hand_over_tree(self) -> None:
        for dirpath, dirnames, filenames in os.walk(self.workspace):
            for name in (dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)):
                self._hand_over(name)

    def _stage(self, files: Mapping[str, bytes] | None) -> None:
        for path, data in (files or {}).items():
            self.write_file(path, data)

    def read_file(self, path: str) -> bytes:
        return resolve_in_workspace(self.workspace, path).read_bytes()

    def write_file(self, path: str, data: bytes) -> None:
        target = resolve_in_workspace(self.workspace, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        root = self.workspace.resolve()
        for p in (target, *target.parents):  # the file and any directory created for it
            if p == root:
                break
            self._hand_over(str(p))


def list_files(workspace: Path) -> list[str]:
    root = workspace.resolve()
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink()
    )
