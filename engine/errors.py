"""User-facing errors. The CLI prints their message (no traceback) and exits with `exit_code`."""

from __future__ import annotations

import errno

# OS errors that say the machine failed, whatever code was running: an attempt that meets one
# while staging or collecting files is not judged (engine/executor.py `run_job`).
MACHINE_FAULT_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.EIO,
        errno.EROFS,
        errno.EMFILE,
        errno.ENFILE,
        errno.ENOMEM,
    }
)


class SilvaError(Exception):
    exit_code = 1


class ConfigError(SilvaError):
    """Bad input: a config, template, idea or run directory. Nothing has been spent yet."""

    exit_code = 2


class EnvironmentFailure(SilvaError):
    """The machine, not the input: a full or read-only disk, a denied path, a cluster that did not
    start. A live run journals the stop and can be resumed once the cause is fixed."""

    exit_code = 3
    journaled = False  # a live run's stop is in its journal
