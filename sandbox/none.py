"""`sandbox: none`: a plain subprocess in a fresh workspace. No isolation; a warning on every run.

Still applies what needs no privileges: cleared environment with an allow-list, rlimits via
prlimit, a deadline on the whole process group, capped output.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

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
    def __init__(self, workspace: Path, gpu_ids: Sequence[int] = ()) -> None:
        super().__init__(workspace)
        self._gpu_ids = tuple(gpu_ids)

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
        return run_process(
            # RLIMIT_AS breaks CUDA's large virtual reservations: GPU attempts go without it.
            [*prlimit_prefix(limits, address_space=not self._gpu_ids), *command],
            cwd=self.workspace,
            env=sandbox_env(env, **fixed),
            limits=limits,
            workspace=self.workspace,
        )

    def close(self) -> None:
        """Nothing to release: run_process already killed the process group."""


@sandbox_provider("none")
class NoneProvider:
    name = "none"

    def check(self) -> None:
        log.warning(WARNING)

    def open(self, workspace: Path, *, gpu_ids: Sequence[int] = ()) -> UnsandboxedWorkspace:
        return UnsandboxedWorkspace(workspace, gpu_ids)
