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

With `prestart: N` (sandbox/prestart.py) N containers per process are created and started ahead
of need, each from the same `container_config` as a cold one for its attempt's shape, running
the waiting interpreter with the order to come on stdin; a take renames its waiting workspace
onto the attempt's (the bind mount follows the directory) and sends the order on one attach
that then brings the output.

The `docker` SDK is imported inside functions: `import sandbox` never needs it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field

from sandbox import prestart, seccomp, warm
from sandbox.base import ExecResult, HostWorkspace, Limits, SandboxUnavailable, list_files, sandbox_provider
from sandbox.docker_io import Attached, CpuSampler, pump, remove
from sandbox.process import OutputCap, looks_oom, sandbox_env

WORKSPACE = "/workspace"
DEFAULT_IMAGE = "silva-base:py311"
MANAGED = "silva.managed"
OWNER = "silva.owner"
RUN = "silva.run"
BUILD_SCRIPT = Path(__file__).resolve().parents[1] / "cluster" / "images" / "build_base.sh"
_SANDBOX_UID = 65534
# The Limits a container fixes when it is created (its cgroup and ulimits; /tmp is the shape's).
CONTAINER_LIMITS = ("memory_mb", "processes", "cpu_s", "file_size_mb")


def _owner_id(pid: int) -> str | None:
    """host:pid:start-time names a process uniquely even after its pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            start = f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None
    return f"{socket.gethostname()}:{pid}:{start}"


class DockerOptions(prestart.PrestartOptions):
    """Provider options (`get_provider("docker", **options)`); `prestart` and `prestart_imports`
    in sandbox/prestart.py."""

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

    def __init__(
        self,
        provider: DockerProvider,
        workspace: Path,
        gpu_ids: Sequence[int],
        pool: prestart.Pool[_Started] | None = None,
    ) -> None:
        super().__init__(workspace)
        self._provider = provider
        self._gpu_ids = tuple(gpu_ids)
        self._pool = pool
        self._fresh = True  # no exec yet: the first may run in a container started ahead of need
        self.prestarted = False  # whether it did (for the tests and the bench)
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
        environment = self.environment(env)  # a credential-like name is refused before anything starts
        started = self._take_started(command, limits, env)
        with prestart.released_on_error(started):
            self._stage(files)
        result = None
        if started is not None:
            result = self._provider.run_started(started, command, limits)
            self.prestarted = result is not None  # else it died before the order: start afresh
        if result is None:
            config = self.container_config(list(command), limits, environment)
            result = self._provider.run_container(config, limits)
        return result.model_copy(update={"files": list_files(self.workspace)})

    def environment(self, env: Mapping[str, str] | None) -> dict[str, str]:
        fixed = {"HOME": "/tmp", "TMPDIR": "/tmp", "USER": "nobody", "MPLCONFIGDIR": "/tmp/matplotlib"}
        if self._gpu_ids:
            fixed["NVIDIA_VISIBLE_DEVICES"] = ",".join(map(str, self._gpu_ids))
        return sandbox_env(env, **fixed)

    def _take_started(
        self, command: Sequence[str], limits: Limits, env: Mapping[str, str] | None
    ) -> _Started | None:
        """On the first exec, a container started ahead of need for an attempt like this one,
        its waiting workspace renamed onto this one (still empty)."""
        fresh, self._fresh = self._fresh, False
        if self._pool is None or not fresh or not prestart.runnable(command):
            return None
        started = prestart.take(self._pool, self.shape(command, limits, env), self.workspace)
        self.prestarted = started is not None
        return started

    def shape(self, command: Sequence[str], limits: Limits, env: Mapping[str, str] | None) -> prestart.Shape:
        """What a container started for this exec fixes: all `container_config` takes but the
        command and the workspace."""
        return prestart.Shape(
            python=command[0],
            tmp_mb=limits.disk_mb or self._provider.options.tmp_mb,
            env=tuple(sorted((env or {}).items())),
            gpu_ids=self._gpu_ids,
            staging=str(prestart.staging_folder(self.workspace)),
            limits=tuple(getattr(limits, name) for name in CONTAINER_LIMITS),
        )

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


class _Started:
    """A container started ahead of need (sandbox/prestart.py) on a waiting workspace: created
    from the cold `container_config` for its shape, plus an open stdin that carries the order."""

    def __init__(self, provider: DockerProvider, shape: prestart.Shape, workspace: Path) -> None:
        self.box = DockerSandbox(provider, workspace, shape.gpu_ids)
        config = self.config(self.box, shape, provider.options.prestart_imports)
        try:
            self.container = provider._connect().containers.create(**config)
        except BaseException:
            shutil.rmtree(workspace, ignore_errors=True)
            raise
        try:
            self.container.start()
        except BaseException:
            self.close()
            raise

    @staticmethod
    def config(box: DockerSandbox, shape: prestart.Shape, modules: Sequence[str]) -> dict[str, Any]:
        """A cold container's `container_config` for `shape` on `box`, running the waiting
        interpreter, with an open stdin."""
        limits = Limits(**dict(zip(CONTAINER_LIMITS, shape.limits, strict=True)), disk_mb=shape.tmp_mb)
        command = prestart.launcher(shape.python, 0, None, modules)
        config = box.container_config(command, limits, box.environment(dict(shape.env)))
        # docker-py sets StdinOnce with it (not detached): the first attach's EOF closes stdin, and
        # the interpreter, having read the order, opens /dev/null in its place.
        config["stdin_open"] = True
        return config

    @property
    def workspace(self) -> Path:
        return self.box.workspace

    def alive(self) -> bool:
        import docker

        try:
            self.container.reload()
        except docker.errors.DockerException:
            return False
        return bool(self.container.status == "running")

    def running(self) -> bool:
        return True  # started by the engine: the bind mount is made, the workspace may move

    def release(self) -> None:
        """Remove the container, whatever it runs."""
        remove(self.container)

    def close(self) -> None:
        """Closed unused: the container and its waiting workspace go."""
        self.release()
        shutil.rmtree(self.box.workspace, ignore_errors=True)


def _give_to_sandbox(path: str) -> None:
    # The container user must own the bind mount; as root we can give it away, otherwise
    # (rootless engines map uids differently) the path is opened to everyone instead.
    if os.geteuid() == 0:
        os.lchown(path, _SANDBOX_UID, _SANDBOX_UID)
    elif not os.path.islink(path):
        os.chmod(path, 0o777 if os.path.isdir(path) else 0o666)


# Engines and readiness are per process, not per provider object: the engine asks for a provider
# per attempt, and each attempt must not pay for a new connection, a ping and a sweep.
_ENGINES: dict[str | None, tuple[Any, Any]] = {}
_READY: set[tuple[str | None, str]] = set()
# The font cache each (engine, image) shares with its containers; None: none to share.
_FONT_CACHES: dict[tuple[str | None, str], Path | None] = {}
# Containers started ahead of need, by options, per process (`prestart` > 0).
_POOLS: dict[str, prestart.Pool[_Started]] = {}
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
        return DockerSandbox(self, workspace, gpu_ids, self._pool())

    def _pool(self) -> prestart.Pool[_Started] | None:
        if not self.options.prestart:
            return None
        # The engine builds a provider per attempt, each with a fresh run_id unless one is set:
        # the attempts of one process share a pool all the same (labels stay this process's).
        exclude = set() if "run_id" in self.options.model_fields_set else {"run_id"}
        key = self.options.model_dump_json(exclude=exclude)
        with _lock:
            if key not in _POOLS:

                def start(shape: prestart.Shape, workspace: Path) -> _Started:
                    return _Started(self, shape, workspace)

                _POOLS[key] = prestart.Pool(self.options.prestart, start)
            return _POOLS[key]

    # -- one container -----------------------------------------------------------------------
    def run_container(self, config: dict[str, Any], limits: Limits) -> ExecResult:
        client, stream_api = self._engine()
        start = time.monotonic()
        container = client.containers.create(**config)
        try:
            stream = stream_api.attach(container.id, stdout=True, stderr=True, stream=True, demux=True)
            container.start()
            return self._supervise(container, stream, limits, start)
        finally:
            remove(container)

    def run_started(self, started: _Started, command: Sequence[str], limits: Limits) -> ExecResult | None:
        """Give a container started ahead of need `command` (its limits are the container's own);
        the deadline counts from now. None when the order could not be sent (the caller then
        starts afresh); the container is removed either way."""
        import docker

        start = time.monotonic()
        try:
            try:
                stream = Attached(self._engine()[1], started.container.id)
            except (docker.errors.DockerException, OSError):
                return None
            try:
                stream.send(prestart.order(command, ()))
            except OSError:
                stream.close()
                return None
            return self._supervise(started.container, stream, limits, start, cpu_from_now=True)
        finally:
            started.release()

    def _supervise(
        self, container: Any, stream: Any, limits: Limits, start: float, *, cpu_from_now: bool = False
    ) -> ExecResult:
        """Drain the running container's output `stream` ((stdout, stderr) chunk pairs) into
        capped buffers until it exits or its deadline (`limits.wall_s` from `start`) stops it."""
        import requests

        out, err = OutputCap(limits.output_bytes), OutputCap(limits.output_bytes)
        drain = threading.Thread(target=pump, args=(stream, out, err), daemon=True)
        drain.start()
        sampler = self._sampler(container, cpu_from_now)
        timed_out = False
        try:
            status = container.wait(timeout=max(0.001, start + limits.wall_s - time.monotonic()))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            timed_out = True
            status = self._stop(container, limits.kill_grace_s)
        sampler.stop()
        drain.join(timeout=5.0)
        stream.close()
        state = self._connect().api.inspect_container(container.id)["State"]
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

    def _sampler(self, container: Any, from_now: bool) -> CpuSampler:
        pid = int(container.client.api.inspect_container(container.id)["State"].get("Pid") or 0)
        sampler = CpuSampler(pid, from_now)
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
            # ignore_removed: one removed between the listing and its inspection (an attempt's
            # own, ending) would otherwise raise NotFound and leave every other one in place.
            containers = self._connect().containers.list(
                all=True, filters={"label": f"{MANAGED}=1"}, ignore_removed=True
            )
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


def ensure_image(tag: str = DEFAULT_IMAGE, packages: Sequence[str] = ()) -> None:
    """Build the registry-free base image unless it already exists with these packages."""
    result = subprocess.run(["bash", str(BUILD_SCRIPT), tag, *packages], capture_output=True, text=True)
    if result.returncode != 0:
        raise SandboxUnavailable(
            f"building image {tag} failed:\n{result.stdout[-2000:]}{result.stderr[-4000:]}"
        )
