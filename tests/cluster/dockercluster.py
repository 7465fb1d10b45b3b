"""A Ray cluster of Docker containers on a private network the test creates (multi-node tests)."""

from __future__ import annotations

import secrets
import shutil
import subprocess
from pathlib import Path

NODE_FLAGS = [
    # Ray's object store lives in /dev/shm (Docker's default is 64 MB).
    "--shm-size=1g",
    # bubblewrap inside a node: mount and network namespaces (loopback setup needs NET_ADMIN);
    # experiment code still runs as an unprivileged uid with no capabilities in its sandbox.
    "--cap-add=SYS_ADMIN",
    "--cap-add=NET_ADMIN",
    "--security-opt=seccomp=unconfined",
    "--security-opt=apparmor=unconfined",
]
RAY_FLAGS = ["--disable-usage-stats", "--block"]


def docker_available() -> str | None:
    """None when a Docker engine answers, else why not (the skip reason)."""
    if shutil.which("docker") is None:
        return "no `docker` command on this machine"
    probe = subprocess.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return f"the Docker engine does not answer: {probe.stderr.strip()[:200]}"
    return None


def docker(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:3])}... failed: {result.stderr[-2000:]}")
    return result


class DockerRayCluster:
    """Head and workers as containers on an internal network (no route out), sharing one
    directory mounted at the same path everywhere: the run directory lives there."""

    def __init__(self, image: str, shared: Path) -> None:
        self.image, self.shared = image, shared
        self.id = secrets.token_hex(4)
        self.network = f"silva-test-{self.id}"
        self.env = {
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(16),
            # Declare a killed node dead after a few seconds instead of the default ~15.
            "RAY_health_check_initial_delay_ms": "1000",
            "RAY_health_check_period_ms": "1000",
            "RAY_health_check_timeout_ms": "1000",
            "RAY_health_check_failure_threshold": "3",
        }
        docker("network", "create", "--internal", "--label", f"silva.test={self.id}", self.network)

    def name(self, host: str) -> str:
        return f"silva-{self.id}-{host}"

    def start(self, host: str, ray_args: list[str]) -> None:
        envs = [f"--env={k}={v}" for k, v in self.env.items()]
        docker(
            "run",
            "-d",
            f"--name={self.name(host)}",
            f"--hostname={host}",
            f"--network={self.network}",
            f"--label=silva.test={self.id}",
            f"--volume={self.shared}:{self.shared}",
            *NODE_FLAGS,
            *envs,
            self.image,
            "ray",
            "start",
            *ray_args,
            *RAY_FLAGS,
        )

    def start_head(self) -> None:
        # The head holds no CPUs: every attempt runs on a worker, the driver runs here.
        self.start("head", ["--head", "--port=6379", "--num-cpus=0", "--include-dashboard=false"])

    def start_worker(self, host: str, cpus: int = 2) -> None:
        self.start(host, ["--address=head:6379", f"--num-cpus={cpus}"])

    def exec(
        self, host: str, command: str, *, detach: bool = False, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return docker(
            "exec",
            *(["-d"] if detach else []),
            self.name(host),
            "sh",
            "-c",
            command,
            check=False,
            timeout=timeout,
        )

    def ray_started(self, host: str) -> bool:
        """`ray start` prints this once its node has registered with the head (no Python start-up)."""
        return "Ray runtime started" in docker("logs", self.name(host), check=False).stdout

    def kill(self, host: str) -> None:
        docker("kill", self.name(host))

    def remove(self) -> None:
        ids = docker("ps", "-aq", "--filter", f"label=silva.test={self.id}", check=False).stdout.split()
        if ids:
            docker("rm", "-f", *ids, check=False)
        docker("network", "rm", self.network, check=False)
