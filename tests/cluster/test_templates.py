"""Cluster templates: Ray's own launcher validation, the KubeRay schema, init, submit staging."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cluster import jobs, launch
from silva.cli.main import main
from tests.helpers import make_config, make_template


@pytest.mark.parametrize("kind", sorted(launch.LAUNCHER))
def test_launcher_templates_pass_rays_own_validation(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cluster", "init", kind, "--dest", str(tmp_path)]) == 0
    path = tmp_path / f"{kind}.yaml"
    assert main(["cluster", "validate", str(path)]) == 0
    assert "valid Ray cluster-launcher config" in capsys.readouterr().out
    prepared = launch.validate_launcher(path)
    if kind != "onprem":  # head, CPU and GPU groups with autoscaling bounds
        types = prepared["available_node_types"]
        assert set(types) == {"head", "cpu_worker", "gpu_worker"} and types["head"]["resources"] == {"CPU": 0}
        assert all(
            types[t]["max_workers"] > types[t]["min_workers"] >= 0 for t in ("cpu_worker", "gpu_worker")
        )
    assert (
        "silva-node" in prepared["docker"]["image"]
        and "--cap-add=SYS_ADMIN" in prepared["docker"]["run_options"]
    )


def test_a_broken_launcher_config_is_refused_with_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = yaml.safe_load(launch.LAUNCHER["aws"].read_text())
    cfg["available_node_types"]["gpu_worker"]["max_worker"] = 4  # misspelt
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["cluster", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "available_node_types.gpu_worker" in err and "max_worker" in err


@pytest.mark.parametrize("name", sorted(launch.KUBERAY))
def test_kuberay_manifests_match_the_schema(name: str) -> None:
    (doc,) = launch.validate_kuberay(launch.KUBERAY[name])
    spec = doc["spec"] if doc["kind"] == "RayCluster" else doc["spec"]["rayClusterSpec"]
    groups = {g["groupName"]: g for g in spec["workerGroupSpecs"]}
    assert set(groups) == {"cpu", "gpu"} and spec["enableInTreeAutoscaling"] is True
    gpu_limits = groups["gpu"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" in gpu_limits
    assert "nvidia.com/gpu" not in groups["cpu"]["template"]["spec"]["containers"][0]["resources"]["limits"]


def test_kuberay_schema_catches_a_misspelt_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(launch.KUBERAY["raycluster"].read_text())
    doc["spec"]["workerGroupSpecs"][0]["minReplica"] = 1
    doc["spec"]["workerGroupSpecs"][1]["template"]["spec"]["containers"][0].pop("image")
    path = tmp_path / "rc.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["cluster", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "minReplica" in err and "image" in err


def test_init_refuses_unknown_kinds_and_existing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cluster", "init", "azure", "--dest", str(tmp_path)]) == 2
    assert "aws, gcp, onprem, kuberay" in capsys.readouterr().err
    assert main(["cluster", "init", "kuberay", "--dest", str(tmp_path)]) == 0
    assert main(["cluster", "init", "kuberay", "--dest", str(tmp_path)]) == 2


def test_submit_stages_config_template_and_data_relative_and_joining_the_cluster(tmp_path: Path) -> None:
    tpl = make_template(tmp_path / "proj" / "tpl")
    cfg = make_config(tmp_path / "proj", tpl, executor={"kind": "ray", "address": None})
    data = tmp_path / "proj" / "data"
    data.mkdir()
    (data / "x.csv").write_text("a,b\n1,2\n")
    dest = tmp_path / "stage"
    staged = yaml.safe_load(jobs.stage(cfg, "/shared/runs", [data], dest).read_text())
    assert staged["template"] == "template" and (dest / "template" / "experiment.py").is_file()
    assert staged["executor"]["address"] == "auto" and staged["output_dir"] == "/shared/runs"
    assert (dest / "data" / "x.csv").read_text().startswith("a,b")


def test_submit_wants_an_absolute_shared_output_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_config(tmp_path, make_template(tmp_path / "tpl"))
    assert (
        main(["cluster", "submit", str(cfg), "--output-dir", "runs", "--address", "http://127.0.0.1:9"]) == 2
    )
    assert "shared storage" in capsys.readouterr().err
