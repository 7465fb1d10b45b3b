"""Sandboxes started ahead of need (sandbox/prestart.py): one attempt each, run as `python` would
run the attempt cold, under the attempt's own limits, and never kept past their use; on `local`
and, where an engine answers, `docker` (one container per attempt, none left after it)."""

from __future__ import annotations

import os
import socket
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandbox import ExecResult, Limits, SandboxProvider, docker_provider, get_provider, local, prestart
from sandbox.conformance import assert_no_process_left
from sandbox.docker_provider import DockerOptions, DockerProvider, DockerSandbox
from sandbox.local import BwrapSandbox, LocalOptions, LocalProvider

LIMITS = Limits(wall_s=120)
Box = BwrapSandbox | DockerSandbox


@pytest.fixture(scope="module")
def cold() -> LocalProvider:
    provider = get_provider("local")
    assert isinstance(provider, LocalProvider)
    provider.check()
    return provider


@pytest.fixture(scope="module")
def started() -> LocalProvider:
    provider = get_provider("local", prestart=2, prestart_imports=["json", "numpy"])
    assert isinstance(provider, LocalProvider)
    provider.check()
    return provider


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def pair(request: pytest.FixtureRequest) -> tuple[SandboxProvider, SandboxProvider]:
    """A provider starting cold and one with `prestart`, of each kind."""
    if request.param == "local":
        return request.getfixturevalue("cold"), request.getfixturevalue("started")
    return request.getfixturevalue("docker_provider"), request.getfixturevalue("docker_prestart_provider")


def _box(provider: SandboxProvider, root: Path, name: str) -> Box:
    box = provider.open(root / "nodes" / name / "attempt-1")
    assert isinstance(box, BwrapSandbox | DockerSandbox)
    return box


def _exec_started(
    provider: SandboxProvider,
    root: Path,
    name: str,
    command: list[str],
    limits: Limits = LIMITS,
    files: dict[str, bytes] | None = None,
) -> tuple[Box, ExecResult]:
    """Run `command` as an attempt's first exec once a sandbox of its shape is waiting: an
    attempt of the same shape before it makes the pool start one."""
    prime = _box(provider, root, f"{name}-prime")
    try:
        prime.exec(command, limits=limits, files=files)
    finally:
        prime.close()
    _settle()
    box = _box(provider, root, name)
    return box, box.exec(command, limits=limits, files=files)


def _settle(within_s: float = 120.0) -> None:
    """Wait until every sandbox the pools were asked for has started (a container takes a while)."""
    pools: list[Any] = [*local._POOLS.values(), *docker_provider._POOLS.values()]
    _until(lambda: all(pool.settled() for pool in pools), within_s)


def _stray_containers(provider: DockerProvider) -> set[str]:
    """Containers of this process that no pool keeps waiting: those of attempts, left behind
    (once the pools have started what the last takes asked for)."""
    _settle()
    owner = provider.labels["silva.owner"]
    mine = provider._connect().containers.list(
        all=True, filters={"label": f"silva.owner={owner}"}, ignore_removed=True
    )
    waiting = {
        box.container.id
        for pool in docker_provider._POOLS.values()
        for queue in pool._waiting.values()
        for _, box in queue
    }
    return {c.id for c in mine} - waiting


SCRIPT = """
import sys
print(__name__, __file__, sys.argv, sys.path[0], sorted(k for k in globals() if not k.startswith('__')))
def inner():
    raise ValueError('boom')
inner()
"""
CASES: dict[str, tuple[list[str], dict[str, bytes]]] = {
    "script": (["python3", "main.py", "a", "b"], {"main.py": SCRIPT.encode()}),
    "code": (["python3", "-c", "import sys; print(__name__, sys.argv, repr(sys.path[0])); 1/0", "x"], {}),
    "syntax": (["python3", "main.py"], {"main.py": b"x = (\n"}),
    "missing": (["python3", "missing.py"], {}),
    "exit": (["python3", "-c", "import sys; print('out'); sys.exit(3)"], {}),
    "signal": (["python3", "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"], {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_started_sandbox_runs_the_attempt_as_python_would(
    pair: tuple[SandboxProvider, SandboxProvider], tmp_path: Path, case: str
) -> None:
    cold, started = pair
    command, files = CASES[case]
    before = _box(cold, tmp_path, "cold")
    try:
        want = before.exec(command, limits=LIMITS, files=files)
    finally:
        before.close()
    box, got = _exec_started(started, tmp_path, case, command, files=files)
    box.close()
    assert box.prestarted
    assert (got.exit_code, got.stdout, got.stderr) == (want.exit_code, want.stdout, want.stderr)


def test_the_imports_are_made_before_the_attempt_and_its_limits_are_its_own(
    started: LocalProvider, tmp_path: Path
) -> None:
    probe = textwrap.dedent(
        """
        import resource, sys
        print('numpy' in sys.modules, [resource.getrlimit(getattr(resource, n)) for n in
              ('RLIMIT_CPU', 'RLIMIT_AS', 'RLIMIT_NPROC', 'RLIMIT_FSIZE', 'RLIMIT_CORE')])
        """
    )
    limits = Limits(wall_s=60, cpu_s=50, memory_mb=3000, processes=40, file_size_mb=7)
    box, res = _exec_started(started, tmp_path, "limits", ["python3", "-c", probe], limits=limits)
    box.close()
    assert box.prestarted and res.exit_code == 0, res
    mb = 2**20
    want = [(50, 50), (3000 * mb, 3000 * mb), (40, 40), (7 * mb, 7 * mb), (0, 0)]
    assert res.stdout == f"True {want}\n"


def test_each_attempt_has_its_own_sandbox_and_none_is_reused(
    pair: tuple[SandboxProvider, SandboxProvider], tmp_path: Path
) -> None:
    started = pair[1]
    code = ["python3", "-c", "import os; open('mine', 'w').write(str(os.getuid())); print(os.listdir('.'))"]
    _exec_started(started, tmp_path, "first", code)[0].close()
    _settle()
    boxes = [_box(started, tmp_path, f"n{i}") for i in range(2)]
    try:
        results = [box.exec(code, limits=LIMITS) for box in boxes]
        assert all(box.prestarted for box in boxes)
        assert [r.stdout for r in results] == ["['mine']\n"] * 2  # each workspace fresh and its own
        leased = [box for box in boxes if isinstance(box, BwrapSandbox) and os.geteuid() == 0]
        if leased:  # each its own uid, its workspace that uid's
            assert len({box.uid for box in leased}) == 2
            assert [box.read_file("mine").decode() for box in leased] == [str(box.uid) for box in leased]
            assert all(box.workspace.stat().st_uid == box.uid for box in leased)
        # A sandbox runs one order: later execs of the attempt start their own.
        again = boxes[0].exec(["python3", "-c", "import sys; print('numpy' in sys.modules)"], limits=LIMITS)
        assert again.stdout == "False\n"
    finally:
        for box in boxes:
            box.close()


def test_another_shape_or_a_written_workspace_starts_cold(
    pair: tuple[SandboxProvider, SandboxProvider], tmp_path: Path
) -> None:
    started = pair[1]
    code = ["python3", "-c", "import sys; print('numpy' in sys.modules)"]
    _exec_started(started, tmp_path, "prime", code)[0].close()
    _settle()
    other_env = _box(started, tmp_path, "env")
    written = _box(started, tmp_path, "written")
    try:
        assert other_env.exec(code, limits=LIMITS, env={"SEED": "1"}).stdout == "False\n"
        written.write_file("data.txt", b"x")
        assert written.exec(code, limits=LIMITS).stdout == "False\n"
        assert not other_env.prestarted and not written.prestarted
    finally:
        other_env.close()
        written.close()


def test_only_python_runs_in_a_started_sandbox() -> None:
    python = ["/opt/venv/bin/python", "python3", "python3.11", "python"]
    assert all(prestart.runnable([p, "main.py"]) and prestart.runnable([p, "-c", "pass"]) for p in python)
    others = [["sh", "-c", "echo"], ["bash", "run.sh"], ["pdfinfo", "paper.pdf"], ["python3-config", "x"]]
    options = [["python3", "-m", "pkg"], ["python3", "-u", "main.py"], ["python3"], ["python3", "-c"]]
    assert not any(prestart.runnable(c) for c in others + options)


def test_a_deadline_leaves_no_process_of_the_attempt(
    pair: tuple[SandboxProvider, SandboxProvider], tmp_path: Path
) -> None:
    started = pair[1]
    code = """
    import os, signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        os.setsid(); os.close(1); os.close(2)
        while True: time.sleep(0.1)
    print('started', flush=True)
    while True: pass
    """
    # 8 s: at load 30 a started container's interpreter took over 3 s to print its first line
    limits = Limits(wall_s=8, kill_grace_s=1)
    token = f"silva-deadline-{uuid.uuid4().hex[:8]}"
    command = ["python3", "-c", textwrap.dedent(code), token]
    box, res = _exec_started(started, tmp_path, "deadline", command, limits=limits)
    box.close()
    assert box.prestarted and res.timed_out and res.stdout == "started\n", res
    assert res.wall_s >= 8  # counted from the order, not from the start of its wait
    assert_no_process_left(token)
    _nothing_of_the_attempt_left(box)


def _nothing_of_the_attempt_left(box: Box) -> None:
    """No process of a local sandbox's leased uid, no container but those waiting in a pool."""
    if isinstance(box, BwrapSandbox) and os.geteuid() == 0:
        assert _none_left(box.uid)
    if isinstance(box, DockerSandbox):
        assert _stray_containers(box._provider) == set()


def _none_left(uid: int, within_s: float = 5.0) -> bool:
    """Whether every process of `uid` is gone within `within_s` (a namespace dies with its init,
    a moment after bwrap)."""
    deadline = time.monotonic() + within_s
    while _processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _processes_of(uid)


def _processes_of(uid: int) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_docker_container_started_ahead_is_configured_as_a_cold_one(tmp_path: Path) -> None:
    provider = DockerProvider(image="img:tag", cpus=2.0)
    cold = DockerSandbox(provider, tmp_path / "nodes" / "n1" / "attempt-1", gpu_ids=(0, 2))
    command, env = ["python3", "main.py"], {"SEED": "1"}
    limits = Limits(wall_s=30, memory_mb=1024, processes=50, cpu_s=20, file_size_mb=3, disk_mb=64)
    shape = cold.shape(command, limits, env)
    waiting = DockerSandbox(provider, tmp_path / "waiting", gpu_ids=shape.gpu_ids)
    started = docker_provider._Started.config(waiting, shape, ["numpy"])
    want = cold.container_config(command, limits, cold.environment(env))
    assert started.pop("stdin_open") and started.pop("command")[:2] == ["python3", "-c"]
    mounts, cold_mounts = started.pop("mounts"), want.pop("mounts")
    assert (mounts[0]["Target"], mounts[0]["Source"]) == ("/workspace", str(waiting.workspace.resolve()))
    assert mounts[1:] == cold_mounts[1:]  # the font cache's, if any
    assert want.pop("stdin_open") is False and want.pop("command") == command
    assert started == want  # image, user, network, limits, tmpfs, caps, seccomp, GPUs, labels


@pytest.mark.docker
def test_docker_runs_each_attempt_in_a_container_of_its_own_then_removes_it(
    docker_prestart_provider: DockerProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used: list[str] = []
    run_started = DockerProvider.run_started

    def recorded(self: DockerProvider, started: Any, command: Any, limits: Limits) -> ExecResult | None:
        used.append(started.container.id)
        return run_started(self, started, command, limits)

    monkeypatch.setattr(DockerProvider, "run_started", recorded)
    code = ["python3", "-c", "import sys; print('numpy' in sys.modules)"]
    _exec_started(docker_prestart_provider, tmp_path, "first", code)[0].close()
    _settle()
    boxes = [_box(docker_prestart_provider, tmp_path, f"n{i}") for i in range(2)]
    try:
        assert [box.exec(code, limits=LIMITS).stdout for box in boxes] == ["True\n"] * 2
    finally:
        for box in boxes:
            box.close()
    assert len(used) == len(set(used)) >= 3 and all(box.prestarted for box in boxes)
    client = docker_prestart_provider._connect()
    assert not {c.id for c in client.containers.list(all=True, ignore_removed=True)} & set(used)
    assert _stray_containers(docker_prestart_provider) == set()


class _Fake:
    def __init__(self, shape: prestart.Shape, workspace: Path) -> None:
        self.workspace, self.closed = workspace, False

    def alive(self) -> bool:
        return not self.closed

    def running(self) -> bool:
        return True

    def release(self) -> None:
        self.closed = True

    def close(self) -> None:
        self.closed = True


def _until(check: Callable[[], bool], within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_the_pool_keeps_its_size_per_shape_and_closes_idle_sandboxes(tmp_path: Path) -> None:
    made: list[_Fake] = []

    def start(shape: prestart.Shape, workspace: Path) -> _Fake:
        made.append(_Fake(shape, workspace))
        return made[-1]

    pool = prestart.Pool(2, start, idle_s=0.5)
    staging = prestart.staging_folder(tmp_path / "nodes" / "n1" / "attempt-1")
    dead = staging.parent / f"{socket.gethostname()}-{2**22 + 1}"  # above pid_max: never alive
    (dead / "3").mkdir(parents=True)
    shape = prestart.Shape("python3", 512, (), (), str(staging))
    assert pool.take(shape) is None  # none waiting yet: the take orders two
    _until(lambda: pool.started == 2)
    first = pool.take(shape)
    assert first is made[0] and pool.taken == 1
    _until(lambda: pool.started == 3)  # one more for the one taken
    assert not dead.exists()  # a dead process's waiting workspaces are swept
    assert pool.take(prestart.Shape("python3", 32, (), (), str(staging))) is None
    made[1].closed = True  # died while waiting: never given out
    assert pool.take(shape) is made[2]
    _until(lambda: all(box.closed for box in made[3:]) and len(made) == 7, within_s=20)
    assert len(made) == 7 and all(box.closed for box in made if box is not first and box is not made[2])
    pool.close()


def test_a_started_sandbox_given_files_it_refuses_is_stopped(
    pair: tuple[SandboxProvider, SandboxProvider], tmp_path: Path
) -> None:
    started = pair[1]
    code = ["python3", "-c", "pass"]
    _exec_started(started, tmp_path, "prime", code)[0].close()
    _settle()
    box = _box(started, tmp_path, "refused")
    try:
        with pytest.raises(ValueError, match="escapes the workspace"):
            box.exec(code, limits=LIMITS, files={"../outside.txt": b"x"})
        assert box.prestarted
        _nothing_of_the_attempt_left(box)
    finally:
        box.close()


class _StartsWhenTaken:
    """A pool whose sandbox starts at the moment it is taken: bwrap is still setting up."""

    def __init__(self, provider: LocalProvider, root: Path) -> None:
        self.provider, self.root, self.count = provider, root, 0

    def take(self, shape: prestart.Shape) -> local._Started:
        self.count += 1
        p = self.provider
        box = BwrapSandbox(self.root / f"waiting-{self.count}", p.options, p._root_args, (), None)
        return local._Started(box, shape, [])


def test_a_sandbox_taken_as_it_starts_moves_once_it_runs(started: LocalProvider, tmp_path: Path) -> None:
    pool = _StartsWhenTaken(started, tmp_path / "nodes" / ".waiting")
    for i in range(3):
        ws = tmp_path / "nodes" / f"n{i}" / "attempt-1"
        box = BwrapSandbox(ws, started.options, started._root_args, (), None, pool)  # type: ignore[arg-type]
        try:
            res = box.exec(["python3", "-c", "print('ok')"], limits=LIMITS)
        finally:
            box.close()
        assert box.prestarted and (res.exit_code, res.stdout, res.stderr) == (0, "ok\n", ""), res


PROBE_EXPERIMENT = """
import sys
started = "numpy" in sys.modules  # before any import of its own: imported by a waiting sandbox
import json
spec = json.load(open("silva_params.json"))
p = spec["params"]
open("prestarted.txt", "w").write(str(started))
score = 1.0 - (p["x"] - 0.3) ** 2 - 0.1 * p["y"] + (0.05 if p["method"] else 0.0) - (0.02 if p["ab"] else 0.0)
json.dump({"metrics": {"score": score, "cost": p["x"] + p["y"]}}, open("results.json", "w"))
"""


@pytest.mark.parametrize("kind", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_a_run_with_prestart_runs_its_attempts_in_started_sandboxes(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from silva.cli.main import main
    from tests.helpers import make_config, make_template

    tpl = make_template(tmp_path / "tpl")
    (tpl / "experiment.py").write_text(PROBE_EXPERIMENT)
    options = {"prestart": 3, "prestart_imports": ["numpy"]}
    config = make_config(tmp_path, tpl, sandbox={"provider": kind, "options": options})
    # The run's providers' pool, by the key each provider files it under.
    if kind == "docker":
        engine = request.getfixturevalue("docker_provider")  # an engine and its image, or a skip
        pools: dict[str, Any] = docker_provider._POOLS
        key = DockerOptions.model_validate(options).model_dump_json(exclude={"run_id"})
    else:
        pools, key = local._POOLS, LocalOptions.model_validate(options).model_dump_json()
    try:
        assert main(["run", str(config)]) == 0
    finally:
        pool = pools.pop(key, None)
        if pool is not None:
            pool.close()
    if kind == "docker":
        assert _stray_containers(engine) == set()
    (run,) = (tmp_path / "runs").iterdir()
    seen = [p.read_text() for p in sorted(run.glob("nodes/n*/attempt-*/prestarted.txt"))]
    # The first attempts start cold and make the pool start the next ones' sandboxes.
    assert len(seen) >= 10 and seen.count("True") >= len(seen) // 2, seen
    assert not (run / "nodes" / prestart.STAGING).exists()  # closed with the pool
