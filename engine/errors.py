"""User-facing errors. The CLI prints their message (no traceback) and exits with `exit_code`."""

from __future__ import annotations


class SilvaError(Exception):
    exit_code = 1


class ConfigError(SilvaError):
    """Bad input: a config, template, idea or run directory. Nothing has been spent yet."""

    exit_code = 2
