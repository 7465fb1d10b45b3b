"""The adversarial conformance suite (sandbox/conformance.py) against every available provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import SandboxProvider
from sandbox.conformance import CASES, Context
from sandbox.local import BwrapSandbox, LocalProvider

# The one case whose first exec has a /tmp of another size than the sandboxes started ahead.
COLD_SHAPE = {"tmp_is_bounded_and_private"}


# Generous: the first docker test also builds the base image when it is missing (~2-5 min).
@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", list(CASES))
def test_conformance(provider: SandboxProvider, case: str, tmp_path: Path) -> None:
    box = provider.open(tmp_path / "workspace")
    try:
        CASES[case](box, Context(provider=provider.name, scratch=tmp_path))
    finally:
        box.close()
    if isinstance(provider, LocalProvider) and provider.options.prestart:
        assert isinstance(box, BwrapSandbox) and box.prestarted == (case not in COLD_SHAPE)
