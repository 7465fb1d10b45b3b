"""GPUs at the configuration level: fractions, what Ray is asked for, what sandboxes receive."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.ray_executor import task_options
from engine.config import Resources
from sandbox.base import Limits
from sandbox.docker_provider import DockerProvider, DockerSandbox
from sandbox.local import BwrapSandbox, LocalProvider
from silva.cli.main import main
from tests.helpers import make_config, make_template


def test_fractional_gpus_share_a_device_and_whole_numbers_above_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert task_options(Resources(num_cpus=2, num_gpus=0.25, memory_mb=4096)) == {
        "num_cpus": 2,
        "num_gpus": 0.25,
        "memory": 4096 * 2**20,
    }
    assert Resources(num_gpus=2).num_gpus == 2
    cfg = make_config(tmp_path, make_template(tmp_path / "tpl"), resources={"default": {"num_gpus": 1.5}})
    assert main(["run", str(cfg)]) == 2
    assert "resources.default.num_gpus = 1.5" in capsys.readouterr().err


def test_cpu_only_kinds_ask_ray_for_no_gpu() -> None:
    assert task_options(Resources(num_cpus=1))["num_gpus"] == 0


def test_local_sandbox_sees_exactly_the_assigned_gpus(tmp_path: Path) -> None:
    provider = LocalProvider()
    gpu = BwrapSandbox(tmp_path, provider.options, [], gpu_ids=[3])
    assert gpu._env(None)["CUDA_VISIBLE_DEVICES"] == "3"
    assert all(d.endswith(("nvidia3", "ctl", "uvm", "uvm-tools", "modeset")) for d in gpu._gpu_devices())
    cpu = BwrapSandbox(tmp_path, provider.options, [], gpu_ids=[])
    assert "CUDA_VISIBLE_DEVICES" not in cpu._env(None) and cpu._gpu_devices() == []
    gpu.close()
    cpu.close()


def test_docker_sandbox_requests_exactly_the_assigned_gpus(tmp_path: Path) -> None:
    provider = DockerProvider()
    config = DockerSandbox(provider, tmp_path, [1, 2]).container_config(["true"], Limits(wall_s=10), {})
    (request,) = config["device_requests"]
    assert request["DeviceIDs"] == ["1", "2"] and request["Capabilities"] == [["gpu"]]
    assert "device_requests" not in DockerSandbox(provider, tmp_path, []).container_config(
        ["true"], Limits(wall_s=10), {}
    )
