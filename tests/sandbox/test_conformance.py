"""The adversarial conformance suite (sandbox/conformance.py) against every available provider."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sandbox import SandboxProvider
from sandbox.conformance import CASES, Context
from sandbox.docker_provider import DockerProvider, DockerSandbox
from sandbox.local import BwrapSandbox, LocalProvider

# The one case whose first exec has a /tmp of another size than the local sandboxes started ahead.
COLD_SHAPE = {"tmp_is_bounded_and_private"}


# Generous: the first docker test also builds the base image when it is missing (~2-5 min).
@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", list(CASES))
def test_conformance(provider: SandboxProvider, case: str, tmp_path: Path) -> None:
    docker_prestart = isinstance(provider, DockerProvider) and provider.options.prestart > 0
    if isinstance(provider, DockerProvider) and docker_prestart:
        _prime(provider, case, tmp_path)
    box = provider.open(tmp_path / "workspace")
    try:
        CASES[case](box, Context(provider=provider.name, scratch=tmp_path))
    finally:
        box.close()
    if isinstance(provider, LocalProvider) and provider.options.prestart:
        assert isinstance(box, BwrapSandbox) and box.prestarted == (case not in COLD_SHAPE)
    if docker_prestart:
        assert isinstance(box, DockerSandbox) and box.prestarted


def _prime(provider: DockerProvider, case: str, tmp_path: Path) -> None:
    """Run the case once beside its workspace (the same staging folder), so that the pool starts
    a container of its first exec's shape (its limits are part of it), and wait until it has."""
    box = provider.open(tmp_path / "prime")
    scratch = tmp_path / "prime-scratch"
    scratch.mkdir()
    try:
        CASES[case](box, Context(provider=provider.name, scratch=scratch))
    finally:
        box.close()
    pool = provider._pool()
    assert pool is not None
    deadline = time.monotonic() + 120
    while not pool.settled() and time.monotonic() < deadline:
        time.sleep(0.05)
