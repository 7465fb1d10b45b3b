"""`sandbox: docker`: one container per exec on any Docker-compatible engine (Docker, Podman).

Each exec is a fresh container: no network, memory limit == memory+swap, a CPU quota, a pids
limit, read-only root with sized tmpfs /tmp, uid 65534, every capability dropped,
no-new-privileges, Silva's seccomp deny-list, the workspace bind-mounted at /workspace, and
GPUs only through a device request naming exactly the ids Ray assigned.

Facts designed against (LESSONS.md): `wait(timeout=)` is an HTTP timeout, so Silva keeps its
own deadline and then stops the container (SIGTERM, grace, SIGKILL); `auto_remove` races with
reading output, so containers are removed by us; output is streamed through `attach` with a cap
and the log driver is off, so 100 MB of stdout costs neither host memory nor disk; Podman
reports an OOM kill as exit 137 with OOMKilled false. Containers carry labels naming their
owner process and are swept when it is gone, so none leak.

The `docker` SDK is imported inside functions: `import sandbox` never needs it.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sandbox import seccomp, warm
from sandbox.base import ExecResult, HostWorkspace, Limits, SandboxUnavailable, list_files, sandbox_provider
from sandbox.process import OutputCap, looks_oom, sandbox_env

WORKSPACE = "/workspace"
DEFAULT_IMAGE = "silva-base:py311"
MANAGED = "silva.managed"
OWNER = "silva.owner"
RUN = "silva.run"
BUILD_SCRIPT = Path(__file__).resolve().parents[1] / "cluster" / "images" / "build_base.sh"
_SANDBOX_UID = 65534


def _owner_id(pid: int) -> str | None:
    """host:pid:start-time names a process uniquely even after its pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            start = f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None
    return f"{socket.gethostname()}:{pid}:{start}"


class DockerOptions(BaseModel):
    """Provider options (`get_provider("docker", **options)`)."""

    model_config = ConfigDict(extra="forbid")

    image: str = DEFAULT_IMAGE
    base_url: str | None = Field(
        default=None, description="engine URL; None uses DOCKER_HOST or the local socket"
    )
    shm_size_mb: int = Field(default=256, gt=0, description="/dev/shm size (Docker's default is 64 MB)")
    tmp_mb: int = Field(default=512, gt=0, description="/tmp tmpfs size when Limits.disk_mb is unset")
    cpus: float | None = Field(default=1.0, gt=0, description="CPU quota in cores; None for no quota")
    user: str = f"{_SANDBOX_UID}:{_SANDBOX_UID}"
    run_id: str = Field(
        default_factory=lambda: uuid.uuid4().hex[:12], description="label for this run's containers"
    )
    api_timeout_s: float = Field(default=120.0, gt=0, description="timeout of ordinary engine API calls")
    font_cache: bool = Field(
        default=True, description="bind a prebuilt matplotlib font cache read-only (sandbox/warm.py)"
    )


class DockerSandbox(HostWorkspace):
    """One workspace; every exec is a new container that is removed before exec returns."""

    def __init__(self, provider: DockerProvider, workspace: Path, gpu_ids: Sequence[int]) -> None:
        super().__init__(workspace)
        self._provider = provider
        self._gpu_ids = tuple(gpu_ids)
        self._hand_over_tree()
        if os.geteuid() == 0:
            os.chmod(workspace, 0o700)  # the sandbox uid and root only

    def exec(
        self,
        command: Sequence[str],
        *,
        limits: Limits,
        files: Mapping[str, bytes] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        self._stage(files)
        fixed = {"HOME": "/tmp", "TMPDIR": "/tmp", "USER": "nobody", "MPLCONFIGDIR": "/tmp/matplotlib"}
        if self._gpu_ids:
            fixed["NVIDIA_VISIBLE_DEVICES"] = ",".join(map(str, self._gpu_ids))
        environment = sandbox_env(env, **fixed)
        result = self._provider.run_container(
            self.container_config(list(command), limits, environment), limits
        )
        return result.model_copy(update={"files": list_files(self.workspace)})

    def container_config(
        self, command: list[str], limits: Limits, environment: dict[str, str]
    ) -> dict[str, Any]:
        """Keyword arguments for `containers.create`: every isolation setting in one place."""
        import docker.types

        opts = self._provider.options
        tmp_mb = limits.disk_mb or opts.tmp_mb
        ulimits = [docker.types.Ulimit(name="core", soft=0, hard=0)]
        if limits.file_size_mb is not None:
            size = limits.file_size_mb * 2**20
            ulimits.append(docker.types.Ulimit(name="fsize", soft=size, hard=size))
        if limits.cpu_s is not None:
            ulimits.append(docker.types.Ulimit(name="cpu", soft=limits.cpu_s, hard=limits.cpu_s))
        config: dict[str, Any] = {
            "image": opts.image,
            "command": command,
            "user": opts.user,
            "working_dir": WORKSPACE,
            "environment": environment,
            "labels": self._provider.labels,
            "hostname": "silva",
            "network_mode": "none",
            "read_only": True,
            "tmpfs": {"/tmp": f"size={tmp_mb}m,mode=1777"},
            "mounts": [docker.types.Mount(WORKSPACE, str(self.workspace.resolve()), type="bind")],
            "shm_size": f"{opts.shm_size_mb}m",
            "pids_limit": limits.processes or -1,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges", f"seccomp={seccomp.docker_profile()}"],
            "ulimits": ulimits,
            "init": True,  # an init as pid 1 forwards SIGTERM and reaps; user code is never pid 1
            "log_config": docker.types.LogConfig(type="none"),  # output comes through attach
            "stdin_open": False,
        }
        cache = _FONT_CACHES.get((opts.base_url, opts.image))
        if cache is not None:
            # The container's own writable config dir (Docker mounts parents first); only the
            # cache file in it is shared, read-only.
            config["tmpfs"][warm.MPL_DIR] = "size=8m,mode=1777"
            target = f"{warm.MPL_DIR}/{cache.name}"
            config["mounts"].append(docker.types.Mount(target, str(cache), type="bind", read_only=True))
        if limits.memory_mb is not None:
            # Equal limits: no swap on top of the memory limit (unset would allow twice as much).
            config["mem_limit"] = config["memswap_limit"] = f"{limits.memory_mb}m"
        if opts.cpus is not None:
            config["nano_cpus"] = int(opts.cpus * 1e9)
        if self._gpu_ids:
            ids = [str(i) for i in self._gpu_ids]
            config["device_requests"] = [docker.types.DeviceRequest(device_ids=ids, capabilities=[["gpu"]])]
        return config

    def _hand_over(self, path: str) -> None:
        _give_to_sandbox(path)

    def _sandbox_user(self) -> tuple[int, int] | None:
        uid, _, gid = self._provider.options.user.partition(":")
        if os.geteuid() != 0 or not uid.isdigit():
            return None  # a named user or a rootless engine: Silva cannot map it to host ids
        return int(uid), int(gid) if gid.isdigit() else int(uid)

    def close(self) -> None:
        """Nothing to release: each exec removes its own container before returning."""


def _give_to_sandbox(path: str) -> None:
    # The container user must own the bind mount; as root we can give it away, otherwise
    # (rootless engines map uids differently) the path is opened to everyone instead.
    if os.geteuid() == 0:
        os.lchown(path, _SANDBOX_UID, _SANDBOX_UID)
    elif not os.path.islink(path):
        os.chmod(path, 0o777 if os.path.isdir(path) else 0o666)


class _CpuSampler(threading.Thread):
    """Reads the container's cgroup CPU counter from the host every 0.1 s (local engines only).

    The engine deletes the cgroup when the container exits, so the last sample is the
    measurement; a remote engine's cgroups are not visible here and cpu_s stays 0.
    """

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.cpu_s = 0.0
        self._path, self._scale = self._counter(pid)
        self._stop_evt = threading.Event()

    @staticmethod
    def _counter(pid: int) -> tuple[str | None, float]:
        try:
            with open(f"/proc/{pid}/cgroup") as f:
                lines = [line.rstrip("\n").split(":", 2) for line in f]
        except OSError:
            return None, 0.0
        for _, controllers, path in lines:
            if "cpuacct" in controllers.split(","):
                return f"/sys/fs/cgroup/{controllers}{path}/cpuacct.usage", 1e-9
        for _, controllers, path in lines:
            if controllers == "":
                for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    if os.path.exists(f"{root}{path}/cpu.stat"):
                        return f"{root}{path}/cpu.stat", 1e-6
        return None, 0.0

    def _read(self) -> float | None:
        assert self._path is not None
        try:
            with open(self._path) as f:
                text = f.read()
        except OSError:
            return None
        if self._path.endswith("cpu.stat"):
            usage = next(line.split()[1] for line in text.splitlines() if line.startswith("usage_usec"))
            return int(usage) * self._scale
        return int(text) * self._scale

    def run(self) -> None:
        if self._path is None:
            return
        while (value := self._read()) is not None:
            self.cpu_s = value
            if self._stop_evt.wait(0.1):
                return

    def stop(self) -> None:
        self._stop_evt.set()


# Engines and readiness are per process, not per provider object: the engine asks for a provider
# per attempt, and each attempt must not pay for a new connection, a ping and a sweep.
_ENGINES: dict[str | None, tuple[Any, Any]] = {}
_READY: set[tuple[str | None, str]] = set()
# The font cache each (engine, image) shares with its containers; None: none to share.
_FONT_CACHES: dict[tuple[str | None, str], Path | None] = {}
_lock = threading.Lock()


def _my_owner() -> str:
    return _owner_id(os.getpid()) or f"{socket.gethostname()}:{os.getpid()}:?"


@sandbox_provider("docker", options=DockerOptions)
class DockerProvider:
    name = "docker"

    def __init__(self, **options: object) -> None:
        self.options = DockerOptions.model_validate(options)
        self.labels = {MANAGED: "1", RUN: self.options.run_id, OWNER: _my_owner()}

    # -- engine ------------------------------------------------------------------------------
    def _connect(self) -> Any:
        return self._engine()[0]

    def _engine(self) -> tuple[Any, Any]:
        with _lock:
            if self.options.base_url not in _ENGINES:
                import docker

                # types-docker declares `timeout: int`; the SDK hands it to requests, where a float
                # is fine and None means no read timeout.
                def client(timeout: float | None) -> Any:
                    if self.options.base_url:
                        return docker.DockerClient(base_url=self.options.base_url, timeout=timeout)  # type: ignore[arg-type]
                    return docker.from_env(timeout=timeout)  # type: ignore[arg-type]

                # A second connection without a read timeout for output streams: a job may be silent
                # longer than any API timeout, and its stream ends when we stop the container.
                _ENGINES[self.options.base_url] = (client(self.options.api_timeout_s), client(None).api)
                atexit.register(self.sweep, mine=True)
            return _ENGINES[self.options.base_url]

    def check(self) -> None:
        if (self.options.base_url, self.options.image) in _READY:
            return
        try:
            import docker
        except ImportError:
            raise SandboxUnavailable(
                "docker sandbox: the docker SDK is not installed; `pip install 'silva[docker]'`"
            ) from None
        where = self.options.base_url or os.environ.get("DOCKER_HOST", "the local socket")
        try:
            client = self._connect()
            client.ping()
        except docker.errors.DockerException as e:
            _ENGINES.pop(self.options.base_url, None)
            raise SandboxUnavailable(
                f"docker sandbox: no Docker-compatible engine answers at {where} ({e}); start Docker "
                "or Podman's API service, set DOCKER_HOST, or use `sandbox: local`"
            ) from None
        try:
            client.images.get(self.options.image)
        except docker.errors.ImageNotFound:
            raise SandboxUnavailable(
                f"docker sandbox: image {self.options.image!r} is missing; build it without a registry with "
                f"`{BUILD_SCRIPT} {self.options.image}` or pull/build one from cluster/images/Dockerfile.*"
            ) from None
        self.sweep(mine=False)
        if self.options.font_cache:
            key = f"docker|{client.images.get(self.options.image).id}"
            cache = warm.font_cache(key, self._build_font_cache)
            _FONT_CACHES[(self.options.base_url, self.options.image)] = cache
        _READY.add((self.options.base_url, self.options.image))

    def _build_font_cache(self, workspace: Path) -> None:
        box = DockerSandbox(self, workspace, ())
        env = {"MPLCONFIGDIR": f"{WORKSPACE}/mpl"}
        box.exec(warm.BUILD_FONT_CACHE, limits=Limits(wall_s=600, memory_mb=2048), env=env)

    def open(self, workspace: Path, *, gpu_ids: Sequence[int] = ()) -> DockerSandbox:
        self.check()
        return DockerSandbox(self, workspace, gpu_ids)

    # -- one container -----------------------------------------------------------------------
    def run_container(self, config: dict[str, Any], limits: Limits) -> ExecResult:
        import docker
        import requests

        client, stream_api = self._engine()
        start = time.monotonic()
        container = client.containers.create(**config)
        try:
            out, err = OutputCap(limits.output_bytes), OutputCap(limits.output_bytes)
            stream = stream_api.attach(container.id, stdout=True, stderr=True, stream=True, demux=True)
            pump = threading.Thread(target=_pump, args=(stream, out, err), daemon=True)
            pump.start()
            container.start()
            sampler = self._sampler(container)
            timed_out = False
            try:
                status = container.wait(timeout=max(0.001, start + limits.wall_s - time.monotonic()))
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                timed_out = True
                status = self._stop(container, limits.kill_grace_s)
            sampler.stop()
            pump.join(timeout=5.0)
            stream.close()
            state = client.api.inspect_container(container.id)["State"]
            code = int(status.get("StatusCode", state.get("ExitCode", -1)))
            stderr = err.text()
            oom = bool(state.get("OOMKilled")) or looks_oom(code, stderr, killed_by_us=timed_out)
            return ExecResult(
                exit_code=None if timed_out else code,
                stdout=out.text(),
                stderr=stderr,
                stdout_truncated=out.truncated,
                stderr_truncated=err.truncated,
                timed_out=timed_out,
                oom_killed=oom,
                wall_s=time.monotonic() - start,
                cpu_s=sampler.cpu_s,
            )
        finally:
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass

    def _sampler(self, container: Any) -> _CpuSampler:
        sampler = _CpuSampler(
            int(container.client.api.inspect_container(container.id)["State"].get("Pid") or 0)
        )
        sampler.start()
        return sampler

    def _stop(self, container: Any, grace_s: float) -> dict[str, Any]:
        """SIGTERM to the container's init, `grace_s`, then SIGKILL: done by the engine."""
        import docker

        try:
            container.stop(timeout=max(1, round(grace_s)))
        except docker.errors.APIError:
            container.kill(signal=signal.SIGKILL)
        status: dict[str, Any] = container.wait(timeout=self.options.api_timeout_s)
        return status

    # -- no leaks ----------------------------------------------------------------------------
    def sweep(self, *, mine: bool) -> int:
        """Remove leaked containers: this process's (mine=True, at exit) or those whose owner
        process on this host is gone (mine=False, at start). Others' live containers stay."""
        import docker

        if self.options.base_url not in _ENGINES:
            return 0  # never connected: nothing of ours can exist
        host, me = socket.gethostname(), _my_owner()
        removed = 0
        try:
            containers = self._connect().containers.list(all=True, filters={"label": f"{MANAGED}=1"})
        except docker.errors.DockerException:
            return 0  # engine gone at exit: nothing we can remove
        for c in containers:
            owner = c.labels.get(OWNER, "")
            if mine:
                stale = owner == me
            else:
                owner_host, _, rest = owner.partition(":")
                pid = rest.partition(":")[0]
                stale = owner_host == host and (not pid.isdigit() or _owner_id(int(pid)) != owner)
            if stale:
                try:
                    c.remove(force=True)
                    removed += 1
                except docker.errors.NotFound:
                    pass
        return removed


def _pump(stream: Any, out: OutputCap, err: OutputCap) -> None:
    """Drain the attach stream into the two capped buffers until the container's output ends."""
    try:
        for chunk_out, chunk_err in stream:
            if chunk_out:
                out.feed(chunk_out)
            if chunk_err:
                err.feed(chunk_err)
    except Exception:  # a stream cut at stop/remove ends the output, nothing more
        pass


def ensure_image(tag: str = DEFAULT_IMAGE, packages: Sequence[str] = ()) -> None:
    """Build the registry-free base image unless it already exists with these packages."""
    result = subprocess.run(["bash", str(BUILD_SCRIPT), tag, *packages], capture_output=True, text=True)
    if result.returncode != 0:
        raise SandboxUnavailable(
            f"building image {tag} failed:\n{result.stdout[-2000:]}{result.stderr[-4000:]}"
        )
