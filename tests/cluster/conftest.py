"""One `ray start` head with its dashboard for every cluster test that needs a live cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster import support


@pytest.fixture(scope="session")
def ray_head() -> Iterator[support.RayHead]:
    with support.ray_head() as head:
        yield head
