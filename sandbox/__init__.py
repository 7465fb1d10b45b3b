"""Running untrusted code: the Sandbox protocol and its providers (none, local, docker)."""

from sandbox.base import (
    ExecResult,
    Limits,
    Sandbox,
    SandboxProvider,
    SandboxUnavailable,
    get_provider,
    provider_names,
    register_provider,
)

__all__ = [
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxProvider",
    "SandboxUnavailable",
    "get_provider",
    "provider_names",
    "register_provider",
]
