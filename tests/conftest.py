"""Shared fixtures. One session-scoped local Ray cluster for every test that needs it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Test clusters listen on 127.0.0.1 only (Ray otherwise binds the host's interface address).
# Read by Ray at import time, so it is set before anything imports ray.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    import ray

    # A private cluster (as the driver starts): plain ray.init() would join a cluster that `ray start`
    # left on this machine, even a stale one, and fail on num_cpus (LESSONS.md, Ray).
    # Logical CPUs above the 2 physical cores so dispatch tests can keep several slots busy.
    ray.init(
        address="local",
        num_cpus=6,
        include_dashboard=False,
        log_to_driver=False,
    )
    yield
    ray.shutdown()
