"""Providers for the sandbox tests: local always, docker whenever an engine answers, each also
with sandboxes started ahead of need.

The docker fixture builds the registry-free base image once per machine (cluster/images/
build_base.sh skips the build when the image already exists with the same packages).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox import Limits, SandboxProvider, SandboxUnavailable, get_provider
from sandbox.docker_provider import DEFAULT_IMAGE, DockerProvider, ensure_image


@pytest.fixture(scope="session")
def local_provider() -> SandboxProvider:
    provider = get_provider("local")
    provider.check()  # this machine must be able to isolate: failing here is a real failure
    return provider


@pytest.fixture(scope="session")
def local_prestart_provider(tmp_path_factory: pytest.TempPathFactory) -> SandboxProvider:
    """`local` with `prestart`, its pool already started for the cases' usual shape: a first exec
    in a workspace beside theirs (the same staging folder) makes it start them."""
    provider = get_provider("local", prestart=2)
    provider.check()
    box = provider.open(tmp_path_factory.mktemp("prime") / "workspace")
    try:
        box.exec(["python3", "-c", "pass"], limits=Limits(wall_s=60))
    finally:
        box.close()
    return provider


@pytest.fixture(scope="session")
def docker_provider() -> Iterator[DockerProvider]:
    try:
        import docker

        docker.from_env(timeout=10).ping()
    except Exception as e:  # any failure to reach an engine means "no docker here"
        pytest.skip(f"no Docker-compatible engine answers: {e}")
    ensure_image(DEFAULT_IMAGE)  # an engine that answers must pass: a failed build fails the tests
    provider = get_provider("docker")
    assert isinstance(provider, DockerProvider)
    try:
        provider.check()
    except SandboxUnavailable as e:
        pytest.fail(str(e))
    yield provider
    provider.sweep(mine=True)


@pytest.fixture(scope="session")
def docker_prestart_provider(docker_provider: DockerProvider) -> Iterator[DockerProvider]:
    """`docker` with `prestart`: its pool starts containers for each shape a first exec brings
    (a container's limits are part of its shape), closed with the session."""
    provider = get_provider("docker", prestart=2, run_id=f"prestart-{docker_provider.options.run_id}")
    assert isinstance(provider, DockerProvider)
    provider.check()
    yield provider
    pool = provider._pool()
    assert pool is not None
    pool.close()


@pytest.fixture(
    params=[
        "local",
        "local_prestart",
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("docker_prestart", marks=pytest.mark.docker),
    ]
)
def provider(request: pytest.FixtureRequest) -> SandboxProvider:
    return request.getfixturevalue(f"{request.param}_provider")
