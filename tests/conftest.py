"""Shared fixtures. One session-scoped local Ray cluster for every test that needs it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Test clusters listen on 127.0.0.1 only (Ray otherwise binds the host's interface address).
# Read by Ray at import time, so it is set before anything imports ray.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with Docker tests first, then those with whole-run (e2e), then slow tests, the rest
    last, each group in collection order: the longest work starts at once and the many short
    modules fill in at the end, so that the workers finish together (`make test` passes
    --no-loadscope-reorder: xdist's own order, most tests first, put the one-test modules of the
    longest runs last)."""
    marks = ("docker", "e2e", "slow")

    def weight(item: pytest.Item) -> int:
        return next((i for i, mark in enumerate(marks) if item.get_closest_marker(mark)), len(marks))

    module: dict[str, int] = {}
    for item in items:
        name = item.nodeid.split("::")[0]
        module[name] = min(module.get(name, len(marks)), weight(item))
    items.sort(key=lambda item: module[item.nodeid.split("::")[0]])


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
