"""Provider-specific behaviour beyond the shared conformance suite, and the failure messages."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import stat
import textwrap
from pathlib import Path

import pytest

from sandbox import Limits, SandboxUnavailable, get_provider, provider_names
from sandbox.conformance import assert_no_process_left
from sandbox.docker_provider import DockerProvider, DockerSandbox, _owner_id
from sandbox.local import BwrapSandbox, LocalProvider
from sandbox.process import BASE_ENV, sandbox_env
from sandbox.seccomp import DENIED, bpf_program, docker_profile

PY = "python3"


def test_registry_lists_the_builtin_providers() -> None:
    assert provider_names() == ["docker", "local", "none"]
    with pytest.raises(
        SandboxUnavailable, match="unknown sandbox provider 'lxc'; available: docker, local, none"
    ):
        get_provider("lxc")


def test_credential_like_variables_are_refused() -> None:
    assert sandbox_env({"SEED": "7"}, HOME="/tmp") == {**BASE_ENV, "HOME": "/tmp", "SEED": "7"}
    for name in ("HF_TOKEN", "OPENAI_API_KEY", "AWS_ACCESS_KEY_ID", "RAY_ADDRESS", "DB_PASSWORD"):
        with pytest.raises(ValueError, match=name):
            sandbox_env({name: "x"})


def test_seccomp_policy_is_one_list_in_two_forms() -> None:
    program = bpf_program()
    assert len(program) % 8 == 0 and len(program) // 8 > len(DENIED)  # struct sock_filter is 8 bytes
    profile = json.loads(docker_profile())
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    assert profile["syscalls"][0]["names"] == sorted(DENIED)
    assert {"ptrace", "mount", "unshare", "bpf"} <= set(DENIED)


# -- none ------------------------------------------------------------------------------------
def test_none_warns_on_every_check_and_still_strips_secrets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none-canary")
    provider = get_provider("none")
    with caplog.at_level(logging.WARNING, logger="sandbox.none"):
        provider.check()
        provider.check()
    assert [r.message.count("WITHOUT isolation") for r in caplog.records] == [1, 1]
    box = provider.open(tmp_path / "ws")
    r = box.exec(
        [PY, "-c", "import os; print(sorted(os.environ))"], limits=Limits(wall_s=30), env={"SEED": "1"}
    )
    assert r.exit_code == 0 and "OPENAI_API_KEY" not in r.stdout and "'SEED'" in r.stdout
    r = box.exec(
        [PY, "-c", "import time; print('x', flush=True); time.sleep(60)"],
        limits=Limits(wall_s=1, kill_grace_s=0.2),
    )
    assert (r.timed_out, r.exit_code, r.stdout) == (True, None, "x\n") and r.wall_s < 5


@pytest.mark.parametrize(
    ("gpu_ids", "visible", "address_space"), [((1, 2), "1,2", "-1"), ((), "", str(512 * 2**20))]
)
def test_none_keeps_an_attempt_on_its_gpus_and_lifts_the_address_space_limit_for_cuda(
    tmp_path: Path, gpu_ids: tuple[int, ...], visible: str, address_space: str
) -> None:
    """Nothing hides the host's devices from an unsandboxed attempt: CUDA_VISIBLE_DEVICES holds it
    to the GPUs it was given (none: none), and RLIMIT_AS, which breaks CUDA's virtual
    reservations, applies only without GPUs."""
    box = get_provider("none").open(tmp_path / "ws", gpu_ids=gpu_ids)
    code = (
        "import os, resource; print(repr(os.environ['CUDA_VISIBLE_DEVICES']), "
        "resource.getrlimit(resource.RLIMIT_AS)[0])"
    )
    r = box.exec([PY, "-c", code], limits=Limits(wall_s=30, memory_mb=512))
    assert r.exit_code == 0, r.stderr
    assert r.stdout.split() == [repr(visible), address_space]


# -- messages when a provider cannot run -----------------------------------------------------
def test_local_without_bubblewrap_says_what_to_do() -> None:
    with pytest.raises(SandboxUnavailable) as e:
        get_provider("local", bwrap="/nonexistent/bwrap").check()
    assert "`/nonexistent/bwrap` not found" in str(e.value)
    assert "make system-deps" in str(e.value) and "sandbox: none" in str(e.value)


def test_local_finds_bubblewrap_where_its_check_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bwrap on Silva's PATH only (unpacked beside, not installed): the check passes, and so
    does every exec, whose sandbox PATH does not hold that directory."""
    real = shutil.which("bwrap")
    if real is None:
        pytest.skip("bubblewrap is not installed")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "unpacked-bwrap").symlink_to(real)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    provider = get_provider("local", bwrap="unpacked-bwrap")
    provider.check()
    box = provider.open(tmp_path / "ws")
    try:
        assert box.exec(["true"], limits=Limits(wall_s=30)).exit_code == 0
    finally:
        box.close()


def test_local_that_cannot_isolate_refuses_to_run(tmp_path: Path) -> None:
    provider = get_provider("local", bwrap="/bin/false")  # present, but every sandbox fails
    with pytest.raises(SandboxUnavailable, match="bubblewrap cannot isolate code on this machine"):
        provider.check()
    with pytest.raises(SandboxUnavailable):
        provider.open(tmp_path / "ws")


def test_docker_without_engine_says_what_to_do() -> None:
    with pytest.raises(SandboxUnavailable) as e:
        get_provider("docker", base_url="unix:///nonexistent/docker.sock").check()
    assert "no Docker-compatible engine answers at unix:///nonexistent/docker.sock" in str(e.value)
    assert "sandbox: local" in str(e.value)


@pytest.mark.docker
def test_docker_missing_image_names_the_build_script(docker_provider: DockerProvider) -> None:
    with pytest.raises(
        SandboxUnavailable, match=r"image 'silva-missing:none' is missing.*build_base.sh silva-missing:none"
    ):
        get_provider("docker", image="silva-missing:none").check()


# -- local -----------------------------------------------------------------------------------
def test_local_runs_as_a_leased_unprivileged_uid(local_provider: LocalProvider, tmp_path: Path) -> None:
    boxes = [local_provider.open(tmp_path / f"ws{i}") for i in range(3)]
    try:
        uids = [b.uid for b in boxes]
        assert len(set(uids)) == 3 and all(u >= 200_000 for u in uids)
        st = (tmp_path / "ws0").stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (uids[0], 0o700)
        probe = (
            "import json, os; s = open('/proc/self/status').read(); print(json.dumps([os.getuid(), "
            "os.getgid(), os.getgroups(), 'CapEff:\\t0000000000000000' in s, 'NoNewPrivs:\\t1' in s]))"
        )
        r = boxes[0].exec([PY, "-c", probe], limits=Limits(wall_s=30))
        assert json.loads(r.stdout) == [uids[0], uids[0], [], True, True], r
    finally:
        for b in boxes:
            b.close()


def test_local_environment_is_exactly_the_allow_list(local_provider: LocalProvider, tmp_path: Path) -> None:
    box = local_provider.open(tmp_path / "ws")
    r = box.exec(
        [PY, "-c", "import os, json; print(json.dumps(dict(os.environ)))"],
        limits=Limits(wall_s=30),
        env={"SEED": "3"},
    )
    env = json.loads(r.stdout)
    expected = set(BASE_ENV) | {"HOME", "TMPDIR", "USER", "LOGNAME", "SEED", "PWD"}  # PWD: set by sh
    expected |= {"MPLCONFIGDIR"}  # the sandbox's own config dir, with the shared font cache in it
    assert set(env) - {"PWD"} == expected - {"PWD"}
    assert env["SEED"] == "3" and env["HOME"] == "/tmp"
    box.close()


def test_local_read_only_path_under_tmp_stays_visible(tmp_path: Path) -> None:
    # A checkout (and its .venv) under /tmp must survive the sandbox's private /tmp.
    tool = tmp_path / "checkout" / ".venv"
    tool.mkdir(parents=True)
    (tool / "marker").write_text("venv here")
    provider = get_provider("local", ro_paths=[str(tool)])
    box = provider.open(tmp_path / "ws")
    r = box.exec(["cat", str(tool / "marker")], limits=Limits(wall_s=30))
    w = box.exec(["sh", "-c", f"echo x > {tool}/other"], limits=Limits(wall_s=30))
    box.close()
    assert (r.exit_code, r.stdout) == (0, "venv here")
    assert w.exit_code != 0 and not (tool / "other").exists()


def test_local_limits_reach_the_process(local_provider: LocalProvider, tmp_path: Path) -> None:
    box = local_provider.open(tmp_path / "ws")
    r = box.exec(
        ["cat", "/proc/self/limits"],
        limits=Limits(wall_s=30, memory_mb=512, processes=77, file_size_mb=9, cpu_s=5),
    )
    rows = {line[:26].strip(): line[26:].split()[:2] for line in r.stdout.splitlines()[1:]}
    assert rows["Max address space"] == [str(512 * 2**20)] * 2
    assert rows["Max processes"] == ["77", "77"]
    assert rows["Max file size"] == [str(9 * 2**20)] * 2
    assert rows["Max cpu time"] == ["5", "5"]
    assert rows["Max core file size"] == ["0", "0"]
    box.close()


def test_local_gpu_attempt_gets_its_ids_and_no_address_space_limit(
    local_provider: LocalProvider, tmp_path: Path
) -> None:
    box = local_provider.open(tmp_path / "ws", gpu_ids=(1, 3))
    code = (
        "import os; print(os.environ['CUDA_VISIBLE_DEVICES']); print([l for l in open('/proc/self/limits') "
        "if l.startswith('Max address space')][0].split()[3])"
    )
    r = box.exec([PY, "-c", code], limits=Limits(wall_s=30, memory_mb=512))
    assert r.stdout.split() == ["1,3", "unlimited"], r  # RLIMIT_AS breaks CUDA
    box.close()


def test_local_disk_quota_stops_a_workspace_filler(local_provider: LocalProvider, tmp_path: Path) -> None:
    box = local_provider.open(tmp_path / "ws")
    code = "i = 0\nwhile True:\n    open(f'f{i}', 'wb').write(b'x' * 2**20); i += 1"
    r = box.exec([PY, "-c", code], limits=Limits(wall_s=60, disk_mb=20))
    assert (r.disk_exceeded, r.timed_out, r.exit_code, r.ok) == (True, False, 137, False), r
    assert "exceeded the disk limit of 20 MB" in r.stderr and r.wall_s < 10
    box.close()


def test_local_daemons_die_when_the_command_exits(local_provider: LocalProvider, tmp_path: Path) -> None:
    token = f"silva-daemon-{os.getpid()}"
    code = textwrap.dedent(f"""
    import os, time, sys
    if os.fork() == 0:
        os.setsid(); os.close(1); os.close(2); time.sleep(120)  # {token}
    print('parent done')
    """)
    box = local_provider.open(tmp_path / "ws")
    r = box.exec([PY, "-c", code, token], limits=Limits(wall_s=60))
    assert (r.exit_code, r.stdout) == (0, "parent done\n") and r.wall_s < 5, r
    assert_no_process_left(token)
    box.close()


def test_local_reports_cpu_seconds(local_provider: LocalProvider, tmp_path: Path) -> None:
    box = local_provider.open(tmp_path / "ws")
    r = box.exec(
        [PY, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 1: pass"],
        limits=Limits(wall_s=30),
    )
    assert r.exit_code == 0 and 0.9 <= r.cpu_s <= r.wall_s + 0.1, r
    box.close()


def test_local_sandbox_satisfies_the_protocol(local_provider: LocalProvider, tmp_path: Path) -> None:
    from sandbox import Sandbox

    box = local_provider.open(tmp_path / "ws")
    assert isinstance(box, BwrapSandbox) and isinstance(box, Sandbox)
    with pytest.raises(ValueError, match="escapes the workspace"):
        box.write_file("../outside.txt", b"x")
    box.close()


# -- docker ----------------------------------------------------------------------------------
def test_docker_container_config_carries_every_isolation_setting(tmp_path: Path) -> None:
    provider = DockerProvider(image="img:tag", shm_size_mb=512, cpus=2.0)
    box = DockerSandbox(provider, tmp_path / "ws", gpu_ids=(0, 2))
    cfg = box.container_config(
        ["true"], Limits(memory_mb=1024, processes=50, file_size_mb=3, disk_mb=64), {"A": "1"}
    )
    assert (cfg["image"], cfg["user"], cfg["network_mode"], cfg["read_only"]) == (
        "img:tag",
        "65534:65534",
        "none",
        True,
    )
    assert cfg["mem_limit"] == cfg["memswap_limit"] == "1024m"
    assert (cfg["nano_cpus"], cfg["pids_limit"], cfg["shm_size"]) == (2_000_000_000, 50, "512m")
    assert cfg["tmpfs"] == {"/tmp": "size=64m,mode=1777"}
    assert cfg["cap_drop"] == ["ALL"] and cfg["security_opt"][0] == "no-new-privileges"
    assert cfg["security_opt"][1].startswith("seccomp=")
    assert cfg["mounts"][0]["Target"] == "/workspace" and cfg["mounts"][0]["Source"] == str(
        (tmp_path / "ws").resolve()
    )
    [request] = cfg["device_requests"]
    assert (request["DeviceIDs"], request["Capabilities"]) == (["0", "2"], [["gpu"]])
    assert cfg["labels"]["silva.managed"] == "1" and cfg["labels"]["silva.run"] == provider.options.run_id
    assert {u["Name"]: u["Hard"] for u in cfg["ulimits"]} == {"core": 0, "fsize": 3 * 2**20}
    assert "device_requests" not in DockerSandbox(provider, tmp_path / "cpu", gpu_ids=()).container_config(
        ["true"], Limits(), {}
    )


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_docker_sweeps_leaked_containers_but_not_live_ones(docker_provider: DockerProvider) -> None:
    client = docker_provider._connect()
    base = {"silva.managed": "1", "silva.run": "sweep-test"}
    client.containers.create(
        docker_provider.options.image,
        ["true"],
        labels={**base, "silva.owner": f"{os.uname().nodename}:999999999:0"},
    )
    live = client.containers.create(
        docker_provider.options.image, ["true"], labels={**base, "silva.owner": _owner_id(1) or ""}
    )
    mine = client.containers.create(
        docker_provider.options.image,
        ["true"],
        labels={**base, "silva.owner": docker_provider.labels["silva.owner"]},
    )
    try:
        assert docker_provider.sweep(mine=False) == 1  # start-up sweep: the dead owner's container goes
        left = {c.id for c in client.containers.list(all=True, filters={"label": "silva.run=sweep-test"})}
        assert left == {live.id, mine.id}
        # Exit sweep: only this process's own (this one, and any a prestart pool keeps waiting).
        assert docker_provider.sweep(mine=True) >= 1
        left = {c.id for c in client.containers.list(all=True, filters={"label": "silva.run=sweep-test"})}
        assert left == {live.id}
    finally:
        live.remove(force=True)


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_a_sweep_goes_on_past_a_container_removed_while_it_lists(
    docker_provider: DockerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another attempt's container may end between the engine's listing and its inspection:
    the sweep still removes every leaked one it lists."""
    from docker.errors import NotFound

    client = docker_provider._connect()
    dead_owner = {
        "silva.managed": "1",
        "silva.run": "sweep-race",
        "silva.owner": f"{os.uname().nodename}:999999999:0",
    }
    leaked = client.containers.create(docker_provider.options.image, ["true"], labels=dead_owner)
    gone = client.containers.create(docker_provider.options.image, ["true"], labels=dead_owner)
    listing = client.api.containers

    def list_then_one_ends(*args: object, **kwargs: object) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = listing(*args, **kwargs)
        gone.remove(force=True)  # listed, then removed before the sweep inspects it
        return sorted(rows, key=lambda r: r["Id"] != gone.id)  # inspected first

    monkeypatch.setattr(client.api, "containers", list_then_one_ends)
    try:
        assert docker_provider.sweep(mine=False) >= 1
        monkeypatch.undo()
        left = client.containers.list(
            all=True, filters={"label": "silva.run=sweep-race"}, ignore_removed=True
        )
        assert left == []
    finally:
        monkeypatch.undo()
        with contextlib.suppress(NotFound):
            leaked.remove(force=True)


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_docker_exec_leaves_no_container_and_reports_cpu(
    docker_provider: DockerProvider, tmp_path: Path
) -> None:
    box = docker_provider.open(tmp_path / "ws")
    r = box.exec(
        [PY, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.5: pass"],
        limits=Limits(wall_s=60),
    )
    assert r.exit_code == 0 and 1.0 <= r.cpu_s <= r.wall_s, r
    run = docker_provider.options.run_id
    assert docker_provider._connect().containers.list(all=True, filters={"label": f"silva.run={run}"}) == []
    box.close()
