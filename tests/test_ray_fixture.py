"""The `ray_cluster` fixture starts a private cluster, as the driver does: a `ray_current_cluster`
file that `ray start` left on the machine, even a stale one, cannot make any subset of the tests
try to join it (docs/cluster.md; LESSONS.md, Ray)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_ray_fixture_starts_a_cluster_of_its_own(ray_cluster: None) -> None:
    import ray

    assert ray.cluster_resources()["CPU"] == 6


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_stale_current_cluster_file_does_not_break_the_ray_fixture() -> None:
    # Ray reads the file under RAY_TMPDIR; a short path keeps its socket paths under 107 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="rf", dir="/tmp"))
    try:
        (tmp / "ray").mkdir()
        (tmp / "ray" / "ray_current_cluster").write_text("127.0.0.1:6999\n")  # nothing listens there
        test = "tests/test_ray_fixture.py::test_the_ray_fixture_starts_a_cluster_of_its_own"
        r = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
            cwd=ROOT,
            env={**os.environ, "RAY_TMPDIR": str(tmp)},
            capture_output=True,
            text=True,
            timeout=280,
        )
        assert r.returncode == 0, r.stdout[-3000:]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
