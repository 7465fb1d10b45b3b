"""`sandbox: local`: bubblewrap namespaces + an unprivileged uid + rlimits + a seccomp filter.

What the sandboxed process sees: its own network namespace (only `lo`), PID, IPC and UTS
namespaces; a root assembled from read-only binds (/usr, a few /etc files, the Python install
prefixes), a fresh /proc, a minimal /dev, sized tmpfs /tmp and /dev/shm, and the workspace
bind-mounted read-write at /workspace. No home, no other workspace, a cleared environment.

As root, bwrap runs privileged without a user namespace and `setpriv` drops to a uid leased
per sandbox: inside a user namespace the sandbox uid would map to host root, which RLIMIT_NPROC
exempts, and a leased uid keeps parallel attempts from sharing one process count. As a normal
user, bwrap creates a user namespace and nested ones are disabled. Limits are a `prlimit`
prefix (never preexec_fn), or, in a sandbox started ahead of need (`prestart`,
sandbox/prestart.py), set by its waiting interpreter on itself before it runs a line of the
attempt's code. The tree dies with the PID namespace, so nothing outlives an exec.
"""

from __future__ import annotations

import fcntl
import os
import random
import select
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pydantic import ConfigDict, Field

from sandbox import prestart, seccomp, warm
from sandbox.base import (
    ExecResult,
    HostWorkspace,
    Limits,
    SandboxUnavailable,
    sandbox_provider,
)
from sandbox.process import (
    Popen,
    prlimit_prefix,
    rlimit_values,
    run_process,
    sandbox_env,
    signal_group,
    spawn,
    supervise,
)

WORKSPACE = "/workspace"
# /etc entries programs commonly need (dynamic linker, TLS roots, fonts, TeX); never the rest.
DEFAULT_ETC = (
    "alternatives", "ssl", "ca-certificates", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "localtime", "timezone", "nsswitch.conf", "fonts", "mime.types", "texmf", "papersize",
    "perl",  # latexmk is Perl, and Debian's perl searches /etc/perl first
)  # fmt: skip
# Merged-/usr systems make these symlinks; older ones have real directories to bind.
_USR_ALIASES = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_SANDBOX_NAME = "silva"
READY_S = 30.0  # how long an attempt waits for a started sandbox's interpreter to run


def _default_ro_paths() -> list[str]:
    # The running interpreter's prefixes, so experiments can use the venv's packages;
    # real paths too, since a venv's python is a symlink into the base install.
    paths = {sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    paths |= {"/var/lib/texmf"}  # TeX format files live outside /usr
    return sorted(p for p in paths if not p.startswith("/usr/"))


class LocalOptions(prestart.PrestartOptions):
    """Provider options (`get_provider("local", **options)`); `prestart` and
    `prestart_imports` in sandbox/prestart.py."""

    model_config = ConfigDict(extra="forbid")

    uid: int | None = Field(
        default=None, ge=1, description="fixed sandbox uid (as root); None leases one per sandbox"
    )
    uid_base: int = Field(default=200_000, ge=1000, description="first uid of the lease range")
    uid_count: int = Field(default=50_000, ge=1)
    ro_paths: list[str] = Field(default_factory=_default_ro_paths, description="extra read-only binds")
    etc: list[str] = Field(default_factory=lambda: list(DEFAULT_ETC), description="/etc entries to expose")
    tmp_mb: int = Field(default=512, gt=0, description="/tmp and /dev/shm size when Limits.disk_mb is unset")
    address_space_limit: bool = Field(default=True, description="RLIMIT_AS for memory (off for CUDA)")
    python: str = Field(default=sys.executable, description="interpreter whose bin dir leads PATH inside")
    bwrap: str = "bwrap"
    lock_dir: str = Field(
        default=os.path.join(tempfile.gettempdir(), "silva-uids"), description="uid lease locks"
    )
    font_cache: bool = Field(
        default=True, description="bind a prebuilt matplotlib font cache read-only (sandbox/warm.py)"
    )


class _UidLease:
    """An exclusive, crash-safe claim on a uid: an flock that dies with the holding process."""

    def __init__(self, opts: LocalOptions) -> None:
        if opts.uid is not None:
            self.uid, self._fd, self._path = opts.uid, -1, ""
            return
        os.makedirs(opts.lock_dir, mode=0o700, exist_ok=True)
        start = random.randrange(opts.uid_count)  # spread holders; any free slot will do
        for i in range(opts.uid_count):
            uid = opts.uid_base + (start + i) % opts.uid_count
            path = os.path.join(opts.lock_dir, str(uid))
            fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                # The holder unlinks its file on release; a lock on an unlinked file is void.
                if os.fstat(fd).st_ino != os.stat(path).st_ino:
                    raise BlockingIOError
            except (BlockingIOError, FileNotFoundError):
                os.close(fd)
                continue
            self.uid, self._fd, self._path = uid, fd, path
            return
        raise SandboxUnavailable(f"all {opts.uid_count} sandbox uids from {opts.uid_base} are in use")

    def release(self) -> None:
        if self._fd >= 0:
            os.unlink(self._path)  # before unlocking, so no one can lock a file about to vanish
            os.close(self._fd)
            self._fd = -1


def _ancestors(path: str) -> Iterator[str]:
    parts = Path(path).parts[1:-1]
    for i in range(len(parts)):
        yield "/" + "/".join(parts[: i + 1])


def _root_args(opts: LocalOptions) -> list[str]:
    """Filesystem arguments shared by every exec: the read-only system view."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _USR_ALIASES:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    # bwrap would create /etc as 0700 for the first bind below: unsearchable by the sandbox uid.
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in opts.etc:
        if (Path("/etc") / name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    made: set[str] = set()
    for path in opts.ro_paths:
        if not os.path.exists(path):
            continue
        # bwrap creates missing parents as 0700, unreadable by the sandbox uid: make them 0755.
        for parent in _ancestors(path):
            if parent not in made:
                made.add(parent)
                args += ["--perms", "0755", "--dir", parent]
        args += ["--ro-bind", path, path]
    return args


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _cpu_reporter(fd: int) -> list[str]:
    """A shell around the command that writes its children's CPU times to memfd `fd`.

    bwrap's outer process exits without reaping the namespace's init, so the rusage Silva
    would get from wait4 is empty; `times` inside sees the whole waited-for tree instead.
    (dash only redirects to single-digit fds, hence /proc/self/fd.)
    """
    # `trap :` (a handler, not SIG_IGN, which exec would pass on) keeps the shell alive through
    # SIGTERM so the command gets its grace period: when the shell dies, the namespace dies.
    return ["/bin/sh", "-c", f'trap : TERM; "$@"; rc=$?; times >/proc/self/fd/{fd}; exit $rc', "sh"]


def _reported_cpu(fd: int) -> float:
    # `times` prints "0m0.00s 0m0.00s" for the shell, then the children's user and system time.
    lines = os.pread(fd, 4096, 0).decode(errors="replace").split("\n")
    try:
        fields = lines[1].split()
        return sum(float(m) * 60 + float(s) for m, s in (f.rstrip("s").split("m") for f in fields[:2]))
    except (IndexError, ValueError):
        return 0.0  # killed before it could report


def _namespace_terminator(bwrap_pid: int) -> None:
    """SIGTERM every process in the sandbox's PID namespace except its init.

    Signalling bwrap itself would kill the namespace at once and skip the grace period; a
    process-group signal would miss children that called setsid(). The namespace holds all.
    """
    init = next((p for p in _pids() if _ppid(p) == bwrap_pid), None)
    if init is None:
        return
    try:
        ns = os.readlink(f"/proc/{init}/ns/pid")
    except OSError:
        return
    for pid in _pids():
        if pid == init:
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") == ns:
                os.kill(pid, signal.SIGTERM)
        except OSError:
            continue  # exited meanwhile, or not ours to read


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


class BwrapSandbox(HostWorkspace):
    """One workspace seen through bubblewrap; every exec is a fresh set of namespaces."""

    def __init__(
        self,
        workspace: Path,
        opts: LocalOptions,
        root_args: list[str],
        gpu_ids: Sequence[int],
        font_cache: Path | None = None,
        pool: prestart.Pool[_Started] | None = None,
    ) -> None:
        super().__init__(workspace)
        self._opts = opts
        self._root_args = root_args
        self._gpu_ids = tuple(gpu_ids)
        self._font_cache = font_cache
        self._pool = pool
        self._fresh = True  # no exec yet: the first may run in a sandbox started ahead of need
        self.prestarted = False  # whether it did (for the tests and the bench)
        # Found on Silva's PATH, as check() looks for it: the sandbox's own PATH may not hold it.
        self._bwrap = shutil.which(opts.bwrap) or opts.bwrap
        self._as_root = os.geteuid() == 0
        self._lease = _UidLease(opts) if self._as_root else None
        self.uid = self._lease.uid if self._lease else 65534
        if self._lease:
            # The workspace belongs to the sandbox uid and no one else (other attempts included).
            self._hand_over_tree()
            os.chmod(workspace, 0o700)

    def exec(
        self,
        command: Sequence[str],
        *,
        limits: Limits,
        files: Mapping[str, bytes] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        full_env = self._env(env)  # a credential-like name is refused before anything starts
        started = self._take_started(command, limits, env)
        with prestart.released_on_error(started):
            self._stage(files)
        if started is not None:
            result = started.run(command, limits, self.workspace, self._address_space())
            if result is not None:
                return result
            self.prestarted = False  # it died before it read the order: start afresh
        fds = [seccomp.bpf_fd(), *self._identity_fds(), _memfd("cpu", b"")]
        try:
            result = run_process(
                [
                    *self._bwrap_args(limits, fds),
                    *self._inner_prefix(limits),
                    *_cpu_reporter(fds[-1]),
                    *command,
                ],
                cwd=self.workspace,
                env=full_env,
                limits=limits,
                workspace=self.workspace,
                pass_fds=fds,
                terminate=_namespace_terminator,
            )
            return result.model_copy(update={"cpu_s": _reported_cpu(fds[-1])})
        finally:
            for fd in fds:
                os.close(fd)

    def _bwrap_args(self, limits: Limits, fds: list[int]) -> list[str]:
        tmp_bytes = str((limits.disk_mb or self._opts.tmp_mb) * 2**20)
        args = [self._bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
        args += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "silva"]
        if not self._as_root:
            args += ["--unshare-user", "--disable-userns", "--uid", str(self.uid), "--gid", str(self.uid)]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--perms", "1777", "--size", tmp_bytes, "--tmpfs", "/tmp"]
        args += ["--perms", "1777", "--size", tmp_bytes, "--tmpfs", "/dev/shm"]
        # After the private /tmp: an interpreter installed under /tmp (a CI checkout) stays visible.
        args += self._root_args
        for dev in self._gpu_devices():
            args += ["--dev-bind", dev, dev]
        if self._font_cache is not None:
            # The sandbox's own writable config dir; only the cache file in it is shared, read-only.
            args += ["--perms", "1777", "--dir", warm.MPL_DIR]
            args += ["--ro-bind", str(self._font_cache), f"{warm.MPL_DIR}/{self._font_cache.name}"]
        seccomp_fd, passwd_fd, group_fd, hosts_fd, _ = fds
        args += [
            "--ro-bind-data",
            str(passwd_fd),
            "/etc/passwd",
            "--ro-bind-data",
            str(group_fd),
            "/etc/group",
        ]
        args += ["--ro-bind-data", str(hosts_fd), "/etc/hosts"]
        args += ["--bind", str(self.workspace.resolve()), WORKSPACE, "--chdir", WORKSPACE]
        return [*args, "--seccomp", str(seccomp_fd), "--"]

    def _address_space(self) -> bool:
        # RLIMIT_AS breaks CUDA's large virtual reservations: GPU attempts go without it.
        return self._opts.address_space_limit and not self._gpu_ids

    def _inner_prefix(self, limits: Limits) -> list[str]:
        return [*self._drop(), *prlimit_prefix(limits, address_space=self._address_space())]

    def _drop(self) -> list[str]:
        if not self._as_root:
            return []
        uid = str(self.uid)
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        return [*drop, "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]

    def _take_started(
        self, command: Sequence[str], limits: Limits, env: Mapping[str, str] | None
    ) -> _Started | None:
        """On the first exec, a sandbox started ahead of need for an attempt like this one, its
        workspace renamed onto this one (still empty) and its uid lease this sandbox's own."""
        fresh, self._fresh = self._fresh, False
        if self._pool is None or not fresh or not prestart.runnable(command):
            return None
        shape = prestart.Shape(
            python=command[0],
            tmp_mb=limits.disk_mb or self._opts.tmp_mb,
            env=tuple(sorted((env or {}).items())),
            gpu_ids=self._gpu_ids,
            staging=str(prestart.staging_folder(self.workspace)),
        )
        started = prestart.take(self._pool, shape, self.workspace)
        if started is None:
            return None
        own, self._lease, started.box._lease = self._lease, started.box._lease, None
        self.uid, self.prestarted = started.box.uid, True
        if own:
            own.release()
        return started

    def _identity_fds(self) -> list[int]:
        # A synthetic passwd/group: getpass.getuser() and friends work, host accounts stay hidden.
        u = self.uid
        passwd = f"root:x:0:0::/root:/bin/sh\n{_SANDBOX_NAME}:x:{u}:{u}::/tmp:/bin/sh\n"
        group = f"root:x:0:\n{_SANDBOX_NAME}:x:{u}:\n"
        hosts = "127.0.0.1 localhost silva\n::1 localhost\n"
        return [
            _memfd("passwd", passwd.encode()),
            _memfd("group", group.encode()),
            _memfd("hosts", hosts.encode()),
        ]

    def _gpu_devices(self) -> list[str]:
        if not self._gpu_ids:
            return []
        names = ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"]
        names += [f"nvidia{i}" for i in self._gpu_ids]
        return [f"/dev/{n}" for n in names if os.path.exists(f"/dev/{n}")]

    def _env(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        fixed = {"HOME": "/tmp", "TMPDIR": "/tmp", "USER": _SANDBOX_NAME, "LOGNAME": _SANDBOX_NAME}
        fixed["PATH"] = f"{os.path.dirname(self._opts.python)}:/usr/local/bin:/usr/bin:/bin"
        if self._gpu_ids:
            fixed["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, self._gpu_ids))
        if self._font_cache is not None:
            fixed["MPLCONFIGDIR"] = warm.MPL_DIR
        return sandbox_env(extra, **fixed)

    def _hand_over(self, path: str) -> None:
        if self._lease:
            os.lchown(path, self.uid, self.uid)

    def _sandbox_user(self) -> tuple[int, int] | None:
        # Without a lease the sandbox maps its uid to Silva's own user: the host's checks apply.
        return (self.uid, self.uid) if self._lease else None

    def close(self) -> None:
        if self._lease:
            self._lease.release()
            self._lease = None


class _Started:
    """A sandbox started ahead of need (sandbox/prestart.py) on a waiting workspace: bwrap with
    the interpreter of `prestart.LAUNCHER` importing, then waiting on a pipe for its order."""

    def __init__(self, box: BwrapSandbox, shape: prestart.Shape, modules: Sequence[str]) -> None:
        self.box = box
        go, self._go = os.pipe()
        self._ready, ready = os.pipe()
        self._running: bool | None = None  # not yet known
        self._cpu = _memfd("cpu", b"")
        fds = [seccomp.bpf_fd(), *box._identity_fds(), self._cpu]
        try:
            self.proc: Popen = spawn(
                [
                    *box._bwrap_args(Limits(disk_mb=shape.tmp_mb), fds),
                    *box._drop(),  # the attempt's rlimits are set in the order, before its code
                    *_cpu_reporter(self._cpu),
                    *prestart.launcher(shape.python, go, ready, modules),
                ],
                cwd=box.workspace,
                env=box._env(dict(shape.env)),
                pass_fds=[*fds, go, ready],
            )
        finally:
            for fd in (*fds[:-1], go, ready):  # the child holds its own copies
                os.close(fd)

    @property
    def workspace(self) -> Path:
        return self.box.workspace

    def alive(self) -> bool:
        return self.proc.poll() is None

    def running(self, within_s: float = READY_S) -> bool:
        """Whether the interpreter runs (so bwrap's mounts are made and the waiting workspace
        may be renamed), waiting up to `within_s` for it: False if it died first."""
        if self._running is None:
            said = select.select([self._ready], [], [], within_s)[0] and os.read(self._ready, 1) == b"r"
            self._running = bool(said)
        return self._running

    def run(
        self, command: Sequence[str], limits: Limits, workspace: Path, address_space: bool
    ) -> ExecResult | None:
        """Give the waiting interpreter `command` and the attempt's limits; the deadline counts
        from now. None when it died before it read them (the caller then starts afresh)."""
        start = time.monotonic()
        order = prestart.order(command, rlimit_values(limits, address_space=address_space))
        try:
            try:
                with os.fdopen(self._go, "wb") as pipe:
                    self._go = -1
                    pipe.write(order)
            except BrokenPipeError:
                return None
            result = supervise(
                self.proc, limits=limits, workspace=workspace, terminate=_namespace_terminator, start=start
            )
            return result.model_copy(update={"cpu_s": _reported_cpu(self._cpu)})
        finally:
            self.release()

    def release(self) -> None:
        """Stop the process (if it still runs) and close the pipe and report."""
        if self.proc.returncode is None:
            signal_group(self.proc.pid, signal.SIGKILL)  # the namespace dies with bwrap
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        for fd in (self._go, self._cpu, self._ready):
            if fd >= 0:
                os.close(fd)
        self._go = self._cpu = self._ready = -1

    def close(self) -> None:
        """Closed unused: the process, its uid lease and its waiting workspace go."""
        self.release()
        self.box.close()
        shutil.rmtree(self.box.workspace, ignore_errors=True)


# Probes passed, by options, per process: the engine asks for a provider per attempt. With each,
# the font cache its sandboxes share (None: none to share).
_PROBED: dict[str, Path | None] = {}
# Sandboxes started ahead of need, by options, per process (`prestart` > 0).
_POOLS: dict[str, prestart.Pool[_Started]] = {}


@sandbox_provider("local", options=LocalOptions)
class LocalProvider:
    name = "local"

    def __init__(self, **options: object) -> None:
        self.options = LocalOptions.model_validate(options)
        self._root_args = _root_args(self.options)
        self._key = self.options.model_dump_json()

    def check(self) -> None:
        if self._key in _PROBED:
            return
        hint = (
            "install bubblewrap (`make system-deps`), use `sandbox: docker`, or `sandbox: none` to run "
            "unisolated"
        )
        if not seccomp.supported():
            raise SandboxUnavailable(
                f"local sandbox: no seccomp syscall table for {os.uname().machine}; {hint}"
            )
        for tool in (self.options.bwrap, "prlimit", *(("setpriv",) if os.geteuid() == 0 else ())):
            if not any(
                os.access(os.path.join(d, tool), os.X_OK) for d in os.get_exec_path()
            ) and not os.access(tool, os.X_OK):
                raise SandboxUnavailable(f"local sandbox: `{tool}` not found; {hint}")
        # Probe with the real argument set: a kernel without user namespaces, a container without
        # CAP_SYS_ADMIN or a seccomp policy that refuses mounts all fail here, not mid-run.
        with tempfile.TemporaryDirectory(prefix="silva-probe-") as tmp:
            box = BwrapSandbox(Path(tmp), self.options, self._root_args, ())
            try:
                probe = box.exec(["true"], limits=Limits(wall_s=30))
            finally:
                box.close()
        if probe.exit_code != 0:
            detail = probe.stderr.strip() or f"exit code {probe.exit_code}"
            raise SandboxUnavailable(
                f"local sandbox: bubblewrap cannot isolate code on this machine ({detail}). If it "
                "reports a permission problem, allow unprivileged user namespaces "
                f"(sysctl kernel.unprivileged_userns_clone=1) or run as root; otherwise {hint}"
            )
        build = self._build_font_cache
        key = warm.interpreter_key(self.options.python)
        _PROBED[self._key] = warm.font_cache(key, build) if self.options.font_cache else None

    def _build_font_cache(self, workspace: Path) -> None:
        box = BwrapSandbox(workspace, self.options, self._root_args, ())
        try:
            env = {"MPLCONFIGDIR": f"{WORKSPACE}/mpl"}
            box.exec(warm.BUILD_FONT_CACHE, limits=Limits(wall_s=600, memory_mb=2048), env=env)
        finally:
            box.close()

    def open(self, workspace: Path, *, gpu_ids: Sequence[int] = ()) -> BwrapSandbox:
        self.check()
        font_cache = _PROBED[self._key]
        pool = self._pool(font_cache)
        return BwrapSandbox(workspace, self.options, self._root_args, gpu_ids, font_cache, pool)

    def _pool(self, font_cache: Path | None) -> prestart.Pool[_Started] | None:
        if not self.options.prestart:
            return None
        if self._key not in _POOLS:
            opts, root_args = self.options, self._root_args

            def start(shape: prestart.Shape, workspace: Path) -> _Started:
                box = BwrapSandbox(workspace, opts, root_args, shape.gpu_ids, font_cache)
                try:
                    return _Started(box, shape, opts.prestart_imports)
                except BaseException:
                    box.close()
                    shutil.rmtree(workspace, ignore_errors=True)
                    raise

            _POOLS[self._key] = prestart.Pool(opts.prestart, start)
        return _POOLS[self._key]
