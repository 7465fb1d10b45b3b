"""Running untrusted code: the Sandbox protocol and its providers (none, local, docker, and more
registered by other packages)."""

from sandbox.base import (
    ExecResult,
    Limits,
    Sandbox,
    SandboxProvider,
    SandboxUnavailable,
    get_provider,
    option_problems,
    provider_names,
    register_provider,
    sandbox_provider,
)

__all__ = [
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxProvider",
    "SandboxUnavailable",
    "get_provider",
    "option_problems",
    "provider_names",
    "register_provider",
    "sandbox_provider",
]
