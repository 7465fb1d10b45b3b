"""The adversarial conformance suite every sandbox provider must pass.

Each case runs hostile or ordinary code through `Sandbox.exec` and asserts the exact outcome.
The pytest suite (tests/sandbox) runs every case against every available provider;
`python -m sandbox.conformance PROVIDER [WORKDIR]` runs them on any registered provider by hand
(e.g. docker against Podman, or one another package registers).

Network cases only ever talk to a listener the case itself opens on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.base import TRUNCATION_MARKER, FileTooLarge, Limits, Sandbox, get_provider, workspace_file

PY = "python3"  # resolves to the host venv's python (local) or the image's (docker)
SECRETS = {
    "OPENAI_API_KEY": "sk-silva-canary-openai",
    "ANTHROPIC_API_KEY": "sk-ant-silva-canary",
    "AWS_SECRET_ACCESS_KEY": "silva-canary-aws",
    "GOOGLE_APPLICATION_CREDENTIALS": "/silva-canary/gcp.json",
    "RAY_AUTH_TOKEN": "silva-canary-ray-token",
}
# Exit code of a memory bomb: an rlimit makes Python raise MemoryError (exit 1), a cgroup
# makes the kernel OOM-kill it (SIGKILL: 137).
MEMORY_BOMB_EXIT = {"local": 1, "none": 1, "docker": 137}


@dataclass
class Context:
    provider: str
    scratch: Path  # a host directory outside the sandbox's workspace
    token: str = field(default_factory=lambda: f"silva-canary-{uuid.uuid4().hex[:10]}")


Case = Callable[[Sandbox, Context], None]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__.removeprefix("case_")] = fn
    return fn


def _json_of(box: Sandbox, code: str, limits: Limits | None = None) -> dict[str, object]:
    result = box.exec([PY, "-c", textwrap.dedent(code)], limits=limits or Limits(wall_s=60))
    assert result.exit_code == 0, f"probe failed: {result}"
    parsed: dict[str, object] = json.loads(result.stdout)
    return parsed


def _host_processes_with(token: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
    return found


def assert_no_process_left(token: str, within_s: float = 5.0) -> None:
    deadline = time.monotonic() + within_s
    while (left := _host_processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"processes survived the sandbox: {left}"


@case
def case_hello_world(box: Sandbox, ctx: Context) -> None:
    r = box.exec([PY, "-c", "print('hello, world')"], limits=Limits(wall_s=60))
    assert (r.exit_code, r.stdout, r.stderr) == (0, "hello, world\n", ""), r
    assert not (r.timed_out or r.oom_killed or r.stdout_truncated) and r.ok


@case
def case_files_in_and_out(box: Sandbox, ctx: Context) -> None:
    code = (
        "import pathlib; d = pathlib.Path('data/in.txt').read_text(); pathlib.Path('out').mkdir(); "
        "pathlib.Path('out/result.txt').write_text(d.upper())"
    )
    r = box.exec([PY, "-c", code], limits=Limits(wall_s=60), files={"data/in.txt": b"abc"})
    assert r.exit_code == 0, r
    assert box.read_file("out/result.txt") == b"ABC"
    assert r.files == ["data/in.txt", "out/result.txt"]
    box.write_file("data/in.txt", b"xyz")
    r = box.exec([PY, "-c", code.replace("pathlib.Path('out').mkdir(); ", "")], limits=Limits(wall_s=60))
    assert r.exit_code == 0 and box.read_file("out/result.txt") == b"XYZ", r


@case
def case_exit_codes(box: Sandbox, ctx: Context) -> None:
    codes = {
        "pass": 0,
        "raise SystemExit(3)": 3,
        "raise ValueError('boom')": 1,
        "import os, signal; os.kill(os.getpid(), signal.SIGTERM)": 128 + 15,
    }
    for code, expected in codes.items():
        r = box.exec([PY, "-c", code], limits=Limits(wall_s=60))
        assert (r.exit_code, r.timed_out, r.oom_killed) == (expected, False, False), (code, r)
    r = box.exec([PY, "-c", "raise ValueError('boom')"], limits=Limits(wall_s=60))
    assert r.stderr.rstrip().endswith("ValueError: boom"), r.stderr


@case
def case_deadline_kills_the_whole_tree(box: Sandbox, ctx: Context) -> None:
    # Traps SIGTERM everywhere, forks, starts a setsid() daemon with closed pipes, then spins.
    code = f"""
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for _ in range(3):
        if os.fork() == 0:
            while True: pass
    if os.fork() == 0:
        os.setsid(); os.close(1); os.close(2)
        while True: time.sleep(0.1)
    print('started', flush=True)
    while True: pass  # {ctx.token}
    """
    wall, grace = 3.0, 1.0
    r = box.exec([PY, "-c", textwrap.dedent(code), ctx.token], limits=Limits(wall_s=wall, kill_grace_s=grace))
    assert (r.timed_out, r.exit_code, r.oom_killed) == (True, None, False), r
    assert r.stdout == "started\n", r
    assert wall <= r.wall_s < wall + grace + 5.0, r.wall_s
    assert_no_process_left(ctx.token)


@case
def case_deadline_gives_a_grace_period(box: Sandbox, ctx: Context) -> None:
    # Well-behaved code gets SIGTERM first and may clean up before the SIGKILL.
    code = """
    import signal, sys, time
    def bye(*_):
        open('checkpoint.txt', 'w').write('saved'); print('cleaned up', flush=True); sys.exit(0)
    signal.signal(signal.SIGTERM, bye)
    print('working', flush=True)
    time.sleep(120)
    """
    r = box.exec([PY, "-c", textwrap.dedent(code)], limits=Limits(wall_s=2, kill_grace_s=10))
    assert (r.timed_out, r.exit_code, r.stdout) == (True, None, "working\ncleaned up\n"), r
    assert box.read_file("checkpoint.txt") == b"saved" and r.wall_s < 2 + 5, r.wall_s


@case
def case_fork_bomb_is_contained(box: Sandbox, ctx: Context) -> None:
    # Every child forks again; the parent counts its own forks until the kernel refuses one.
    code = f"""
    import os, time
    n = 0
    while True:
        try:
            pid = os.fork()
        except BlockingIOError:
            print('contained', n, flush=True); break
        if pid == 0:
            try: os.fork()
            except BlockingIOError: pass
            time.sleep(60)  # {ctx.token}
            os._exit(0)
        n += 1
    """
    limit = 64
    r = box.exec([PY, "-c", textwrap.dedent(code), ctx.token], limits=Limits(wall_s=60, processes=limit))
    assert (r.exit_code, r.timed_out) == (0, False), r
    word, count = r.stdout.split()
    assert word == "contained" and 1 <= int(count) < limit, r.stdout
    assert r.wall_s < 30, r.wall_s  # the sleeping children died with the sandbox
    assert_no_process_left(ctx.token)


@case
def case_memory_bomb_is_out_of_memory(box: Sandbox, ctx: Context) -> None:
    code = "chunks = []\nwhile True: chunks.append(bytearray(16 * 2**20))"
    r = box.exec([PY, "-c", code], limits=Limits(wall_s=60, memory_mb=256))
    # A provider registered by another package may bound memory either way.
    allowed = {MEMORY_BOMB_EXIT[ctx.provider]} if ctx.provider in MEMORY_BOMB_EXIT else {1, 137}
    assert r.oom_killed and not r.timed_out and r.exit_code in allowed, r


@case
def case_file_size_bomb_is_stopped(box: Sandbox, ctx: Context) -> None:
    code = "f = open('big.bin', 'wb')\nwhile True: f.write(b'x' * 2**20); f.flush()"
    r = box.exec([PY, "-c", code], limits=Limits(wall_s=60, file_size_mb=5))
    assert (r.exit_code, r.timed_out) == (1, False), r
    assert "OSError: [Errno 27] File too large" in r.stderr, r.stderr
    assert len(box.read_file("big.bin")) == 5 * 2**20


@case
def case_tmp_is_bounded_and_private(box: Sandbox, ctx: Context) -> None:
    code = f"""
    import os
    with open('/tmp/{ctx.token}', 'wb') as f:
        try:
            while True: f.write(b'x' * 2**20); f.flush()
        except OSError as e:
            print(e.errno, f.tell() // 2**20)
    """
    r = box.exec([PY, "-c", textwrap.dedent(code)], limits=Limits(wall_s=60, disk_mb=32, file_size_mb=1024))
    assert r.exit_code == 0, r
    err, written_mb = map(int, r.stdout.split())
    assert err == errno.ENOSPC and written_mb <= 32, r.stdout
    assert not Path(tempfile.gettempdir(), ctx.token).exists()


@case
def case_stdout_flood_is_capped(box: Sandbox, ctx: Context) -> None:
    code = "import sys\nfor _ in range(100): sys.stdout.write('x' * 2**20)\nsys.stderr.write('done')"
    cap = 1_000_000
    r = box.exec([PY, "-c", code], limits=Limits(wall_s=120, output_bytes=cap))
    assert (r.exit_code, r.stdout_truncated, r.stderr_truncated) == (0, True, False), r.exit_code
    assert r.stdout == "x" * cap + TRUNCATION_MARKER.format(limit=cap)
    assert r.stderr == "done"


@case
def case_network_is_blocked(box: Sandbox, ctx: Context) -> None:
    with _listener() as (port, accepted):
        probe = f"""
        import json, socket
        out = {{'ifaces': sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:])}}
        try:
            socket.create_connection(('127.0.0.1', {port}), timeout=5); out['tcp'] = 'connected'
        except OSError as e:
            out['tcp'] = type(e).__name__
        try:
            socket.getaddrinfo('example.com', 443); out['dns'] = 'resolved'
        except OSError as e:
            out['dns'] = type(e).__name__
        print(json.dumps(out))
        """
        seen = _json_of(box, probe)
    assert seen == {"ifaces": ["lo"], "tcp": "ConnectionRefusedError", "dns": "gaierror"}, seen
    assert accepted == [], "the sandbox reached the host's listener"


@contextlib.contextmanager
def _listener() -> Iterator[tuple[int, list[object]]]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                accepted.append(srv.accept())

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1], accepted
    finally:
        stop.set()
        t.join()
        srv.close()


@case
def case_secrets_are_invisible(box: Sandbox, ctx: Context) -> None:
    saved = {k: os.environ.get(k) for k in SECRETS}
    os.environ.update(SECRETS)
    try:
        probe = """
        import json, os
        procs = {}
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                procs[pid] = open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace')
            except OSError:
                pass  # another uid's process (bwrap's init): not readable, hence not leaking
        print(json.dumps({'env': dict(os.environ), 'procs': procs}))
        """
        seen = _json_of(box, probe)
    finally:
        for k, v in saved.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    text = json.dumps(seen)
    assert not [v for v in SECRETS.values() if v in text], "a host secret reached the sandbox"
    env = seen["env"]
    assert isinstance(env, dict) and not set(env) & set(SECRETS)
    try:
        box.exec([PY, "-c", "pass"], limits=Limits(wall_s=60), env={"OPENAI_API_KEY": "x"})
    except ValueError as e:
        assert "OPENAI_API_KEY" in str(e)
    else:
        raise AssertionError("a credential-like variable was accepted into the sandbox")


@case
def case_other_workspaces_and_home_are_unreadable(box: Sandbox, ctx: Context) -> None:
    other = ctx.scratch / f"other-attempt-{ctx.token}"
    other.mkdir(parents=True)
    (other / "metrics.json").write_text('{"secret": 1}')
    home = Path.home() / f".{ctx.token}"
    home.write_text("host home secret")
    try:
        probe = f"""
        import json
        out = {{}}
        for p in {[str(other / "metrics.json"), str(home), str(Path.home() / ".ray" / "auth_token")]!r}:
            try:
                open(p).read(); out[p] = 'read'
            except OSError as e:
                out[p] = type(e).__name__
        print(json.dumps(out))
        """
        seen = _json_of(box, probe)
    finally:
        home.unlink()
    # The other workspace is simply absent; host-home paths are absent (local) or hit the
    # image's own root-only /root (docker): either way nothing of the host's is read.
    assert seen.pop(str(other / "metrics.json")) == "FileNotFoundError"
    assert set(seen.values()) <= {"FileNotFoundError", "PermissionError"}, seen


@case
def case_nothing_outside_the_workspace_is_writable(box: Sandbox, ctx: Context) -> None:
    targets = ["/", "/usr", "/etc", "/usr/local/bin", str(Path.home()), os.path.realpath(sys.prefix), "/var"]
    probe = f"""
    import json, os
    out = {{}}
    for d in {targets!r}:
        try:
            open(os.path.join(d, {ctx.token!r}), 'w').write('x'); out[d] = 'written'
        except OSError as e:
            out[d] = e.errno
    print(json.dumps(out))
    """
    seen = _json_of(box, probe)
    assert all(v in (errno.EROFS, errno.EACCES, errno.ENOENT) for v in seen.values()), seen
    assert not [d for d in targets if Path(d, ctx.token).exists()]


@case
def case_ptrace_and_mount_are_denied(box: Sandbox, ctx: Context) -> None:
    probe = """
    import ctypes, json, os, time
    libc = ctypes.CDLL(None, use_errno=True)
    def call(f, *a):
        ctypes.set_errno(0)
        return ctypes.get_errno() if f(*a) == -1 else 0
    child = os.fork()
    if child == 0:
        time.sleep(30); os._exit(0)
    out = {
        'attach': call(libc.ptrace, 16, child, None, None),  # PTRACE_ATTACH
        'traceme': call(libc.ptrace, 0, 0, None, None),  # PTRACE_TRACEME
        'mount': call(libc.mount, b'none', b'/tmp', b'tmpfs', 0, None),
        'unshare_user': call(libc.unshare, 0x10000000),  # CLONE_NEWUSER
    }
    os.kill(child, 9)
    print(json.dumps(out))
    """
    seen = _json_of(box, probe)
    assert seen == {
        "attach": errno.EPERM,
        "traceme": errno.EPERM,
        "mount": errno.EPERM,
        "unshare_user": errno.EPERM,
    }, seen


def _raises(kind: type[BaseException], fn: Callable[[], object]) -> None:
    try:
        fn()
    except kind:
        return
    except Exception as e:  # the assertion names what came instead
        raise AssertionError(f"expected {kind.__name__}, got {type(e).__name__}: {e}") from None
    raise AssertionError(f"expected {kind.__name__}, nothing was raised")


@case
def case_file_api_errors(box: Sandbox, ctx: Context) -> None:
    """The documented exceptions of read_file/write_file (docs/sandbox.md, "File contract")."""
    r = box.exec(
        [PY, "-c", "import os; os.mkdir('d'); os.mkfifo('pipe'); open('big', 'wb').write(b'x' * 4096)"],
        limits=Limits(wall_s=60),
    )
    assert r.exit_code == 0, r
    _raises(FileNotFoundError, lambda: box.read_file("missing.txt"))
    _raises(IsADirectoryError, lambda: box.read_file("d"))
    _raises(IsADirectoryError, lambda: box.write_file("d", b"x"))
    _raises(PermissionError, lambda: box.read_file("pipe"))  # would block the host forever
    _raises(FileTooLarge, lambda: box.read_file("big", max_bytes=4095))
    assert box.read_file("big", max_bytes=4096) == b"x" * 4096


@case
def case_file_api_applies_the_sandboxed_users_permissions(box: Sandbox, ctx: Context) -> None:
    code = (
        "import os; open('locked', 'w').write('s'); os.chmod('locked', 0); os.mkdir('ro'); os.chmod('ro', "
        "0o555)"
    )
    r = box.exec([PY, "-c", code], limits=Limits(wall_s=60))
    assert r.exit_code == 0, r
    _raises(PermissionError, lambda: box.read_file("locked"))
    _raises(PermissionError, lambda: box.write_file("locked", b"x"))
    _raises(PermissionError, lambda: box.write_file("ro/new.txt", b"x"))
    box.write_file("fine/new.txt", b"ok")  # a new directory of Silva's own is handed over
    r = box.exec([PY, "-c", "print(open('fine/new.txt').read())"], limits=Limits(wall_s=60))
    assert r.stdout == "ok\n", r


@case
def case_file_api_stays_in_the_workspace(box: Sandbox, ctx: Context) -> None:
    host = ctx.scratch / f"host-{ctx.token}.txt"
    host.parent.mkdir(parents=True, exist_ok=True)
    host.write_text("host file")
    # Links made inside the sandbox point at the host path as the host sees it.
    code = (
        f"import os; os.symlink({str(host)!r}, 'link'); os.symlink('/etc', 'etc'); open('a.txt', "
        "'w').write('a')"
    )
    r = box.exec([PY, "-c", code], limits=Limits(wall_s=60))
    assert r.exit_code == 0, r
    for path in ("../x", f"../{host.name}", str(host), "/etc/passwd", "link", "etc/passwd"):
        _raises(ValueError, lambda p=path: box.read_file(p))  # type: ignore[misc]
        _raises(ValueError, lambda p=path: box.write_file(p, b"x"))  # type: ignore[misc]
        assert workspace_file(box.workspace, path) is None, path
    assert host.read_text() == "host file"
    assert workspace_file(box.workspace, "etc/../a.txt") is None  # `etc` resolves outside first
    assert workspace_file(box.workspace, "./x/../a.txt") == "a.txt"


def run_all(provider: str, workdir: Path, **options: object) -> dict[str, str]:
    """Run every case in a fresh workspace each; returns {case: 'ok' | failure message}."""
    prov = get_provider(provider, **options)
    prov.check()
    results: dict[str, str] = {}
    for name, fn in CASES.items():
        box = prov.open(workdir / name / "workspace")
        try:
            fn(box, Context(provider=provider, scratch=workdir / name))
            results[name] = "ok"
        except AssertionError as e:
            results[name] = f"FAILED: {e}"
        finally:
            box.close()
    return results


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="silva-conformance-") as tmp:
        outcome = run_all(sys.argv[1], Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tmp))
    for name, status in outcome.items():
        print(f"{name:45s} {status}")
    sys.exit(0 if all(s == "ok" for s in outcome.values()) else 1)
