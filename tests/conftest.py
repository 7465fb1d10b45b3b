"""Shared fixtures. One session-scoped local Ray cluster for every test that needs it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    import ray

    # Logical CPUs above the 2 physical cores so dispatch tests can keep several slots busy.
    ray.init(
        num_cpus=6,
        include_dashboard=False,
        log_to_driver=False,
    )
    yield
    ray.shutdown()
