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
STALE = "127.0.0.1:6999"  # where a stale ray_current_cluster file points: nothing listens there


@pytest.mark.slow
def test_the_ray_fixture_starts_a_cluster_of_its_own(ray_cluster: None) -> None:
    import ray

    # Not the stale address below. (Its CPU count is not checked: in the whole suite an earlier
    # test's own private cluster may be the one connected by now.)
    assert ray.is_initialized() and ray.get_runtime_context().gcs_address != STALE


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_stale_current_cluster_file_does_not_break_the_ray_fixture() -> None:
    # Ray reads the file under RAY_TMPDIR; a short path keeps its socket paths under 107 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="rf", dir="/tmp"))
    try:
        (tmp / "ray").mkdir()
        (tmp / "ray" / "ray_current_cluster").write_text(STALE + "\n")
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
