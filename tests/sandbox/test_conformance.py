"""The adversarial conformance suite (sandbox/conformance.py) against every available provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import SandboxProvider
from sandbox.conformance import CASES, Context


# Generous: the first docker test also builds the base image when it is missing (~2-5 min).
@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", list(CASES))
def test_conformance(provider: SandboxProvider, case: str, tmp_path: Path) -> None:
    box = provider.open(tmp_path / "workspace")
    try:
        CASES[case](box, Context(provider=provider.name, scratch=tmp_path))
    finally:
        box.close()
