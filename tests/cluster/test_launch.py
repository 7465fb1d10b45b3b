"""`silva cluster up`/`down` refuse what Ray's own CLI would fail on with a stack trace: one line
naming the cause and the fix, exit 2 (the input) or 3 (the machine), before any cloud call."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from cluster import launch
from silva.cli.main import main

NO_AWS = {
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",  # no instance-metadata probe leaves the machine
}


@pytest.fixture
def templates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for kind in (*launch.LAUNCHER, "kuberay"):
        assert main(["cluster", "init", kind, "--dest", str(tmp_path)]) == 0
    # Should a check let a file through, Ray's CLI must not run against a cloud from a test.
    monkeypatch.setattr(launch, "RAY", "/nonexistent/ray")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal, as under CI or nohup
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in NO_AWS.items():
        monkeypatch.setenv(name, value)
    return tmp_path


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("command", ["up", "down"])
def test_aws_without_credentials_is_one_line_with_the_fix(
    command: str, templates: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("boto3")
    assert main(["cluster", command, str(templates / "aws.yaml"), "--yes"]) == 3
    assert "no AWS credentials" in (err := one_line_error(capsys)) and "aws configure" in err


def test_aws_without_boto3_names_the_extra(
    templates: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # what a missing package looks like to import
    assert main(["cluster", "up", str(templates / "aws.yaml"), "--yes"]) == 3
    assert "pip install 'silva[aws]'" in one_line_error(capsys)


def test_gcp_without_the_google_api_client_names_the_extra(
    templates: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "googleapiclient", None)
    monkeypatch.setitem(sys.modules, "googleapiclient.discovery", None)
    assert main(["cluster", "down", str(templates / "gcp.yaml"), "--yes"]) == 3
    assert "pip install 'silva[gcp]'" in one_line_error(capsys)


def test_gcp_without_credentials_is_one_line_with_the_fix(
    templates: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("googleapiclient.discovery")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(templates / "missing-key.json"))
    assert main(["cluster", "up", str(templates / "gcp.yaml"), "--yes"]) == 3
    err = one_line_error(capsys)
    assert "no Google Cloud credentials" in err and "gcloud auth application-default login" in err


@pytest.mark.parametrize("command", ["up", "down"])
def test_without_a_terminal_and_without_yes_it_says_pass_yes(
    command: str, templates: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cluster", command, str(templates / "onprem.yaml")]) == 2
    assert f"silva cluster {command} {templates / 'onprem.yaml'} --yes" in one_line_error(capsys)


def test_a_kuberay_manifest_given_to_up_says_kubectl(
    templates: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cluster", "up", str(templates / "raycluster.yaml"), "--yes"]) == 2
    err = one_line_error(capsys)
    assert "KubeRay manifest (RayCluster)" in err and "kubectl apply -f" in err and "KeyError" not in err


def test_a_failing_ray_cli_is_the_machines_failure_not_a_bug(
    templates: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(launch, "RAY", "/bin/false")  # Ray's CLI failing after its own output
    assert main(["cluster", "up", str(templates / "onprem.yaml"), "--yes"]) == 3
    assert "`ray up " in one_line_error(capsys)
