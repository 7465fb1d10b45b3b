"""One `ray start` head with its dashboard for the cluster tests that need a live cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster import support


# Per module (they all live in test_driver.py): stopped when that module is done, not kept running
# (a raylet, GCS and dashboard) beside the rest of its worker's tests.
@pytest.fixture(scope="module")
def ray_head() -> Iterator[support.RayHead]:
    with support.ray_head() as head:
        yield head
