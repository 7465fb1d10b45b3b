"""`sandbox: none`: a plain subprocess in a fresh workspace. No isolation; a warning on every run.

Still applies what needs no privileges: cleared environment with an allow-list, rlimits via
prlimit, a deadline on the whole process group, capped output.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from sandbox import warm
from sandbox.base import ExecResult, HostWorkspace, Limits, sandbox_provider
from sandbox.process import prlimit_prefix, run_process, sandbox_env

log = logging.getLogger(__name__)
# `python3` inside means the interpreter running Silva, as in the local sandbox.
_PATH = f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin"

WARNING = (
    "sandbox: none — experiment code runs WITHOUT isolation (it can reach the network and read "
    "your files); API keys are still stripped from its environment. Use `sandbox: local` or "
    "`sandbox: docker` for untrusted code."
)


class UnsandboxedWorkspace(HostWorkspace):
    def __init__(self, workspace: Path, gpu_ids: Sequence[int] = (), font_cache: Path | None = None) -> None:
        super().__init__(workspace)
        self._gpu_ids = tuple(gpu_ids)
        self._font_cache = font_cache

    def exec(
        self,
        command: Sequence[str],
        *,
        limits: Limits,
        files: Mapping[str, bytes] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        self._stage(files)
        fixed = {"HOME": str(self.workspace), "TMPDIR": str(self.workspace), "PATH": _PATH}
        # Nothing hides the host's devices here: CUDA_VISIBLE_DEVICES is what keeps an attempt on
        # the GPUs it was given, and a CPU-only attempt off all of them.
        fixed["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, self._gpu_ids))
        if self._font_cache is not None:
            fixed["MPLCONFIGDIR"] = str(self._seed_font_cache(self._font_cache))
        return run_process(
            # RLIMIT_AS breaks CUDA's large virtual reservations: GPU attempts go without it.
            [*prlimit_prefix(limits, address_space=not self._gpu_ids), *command],
            cwd=self.workspace,
            env=sandbox_env(env, **fixed),
            limits=limits,
            workspace=self.workspace,
        )

    def _seed_font_cache(self, shared: Path) -> Path:
        """Matplotlib's directory under this workspace's HOME, holding a copy of the shared font
        cache: an attempt may rewrite its copy, never what the next attempt starts from."""
        config = self.workspace / ".cache" / "matplotlib"
        if not (config / shared.name).exists():
            config.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shared, config / shared.name)
        return config

    def close(self) -> None:
        """Nothing to release: run_process already killed the process group."""


def _build_font_cache(workspace: Path) -> None:
    env = {"MPLCONFIGDIR": str(workspace / "mpl")}
    UnsandboxedWorkspace(workspace).exec(
        warm.BUILD_FONT_CACHE, limits=Limits(wall_s=600, memory_mb=2048), env=env
    )


@cache
def shared_font_cache() -> Path | None:
    """The font cache of this interpreter, built once per host (sandbox/warm.py), looked up once
    per process: without it every plot script rebuilds it in its fresh HOME (1-15 s)."""
    return warm.font_cache("none|" + warm.interpreter_key(sys.executable), _build_font_cache)


@sandbox_provider("none")
class NoneProvider:
    name = "none"

    def check(self) -> None:
        log.warning(WARNING)

    def open(self, workspace: Path, *, gpu_ids: Sequence[int] = ()) -> UnsandboxedWorkspace:
        return UnsandboxedWorkspace(workspace, gpu_ids, shared_font_cache())
