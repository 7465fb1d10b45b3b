"""Cluster-launcher templates (aws, gcp, on-premise) and KubeRay manifests, checked before use.

Launcher configs go through Ray's own preparation and schema validation (`prepare_config` and
`validate_config`, what `ray up` runs before touching a cloud: no cloud call is made here).
KubeRay manifests are checked against templates/kuberay/schema.yaml. `up` and `down` are Ray's
`ray up` and `ray down`.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from engine.errors import ConfigError, EnvironmentFailure

TEMPLATES = Path(__file__).resolve().parent / "templates"
LAUNCHER = {name: TEMPLATES / "launcher" / f"{name}.yaml" for name in ("aws", "gcp", "onprem")}
KUBERAY = {name: TEMPLATES / "kuberay" / f"{name}.yaml" for name in ("raycluster", "rayjob")}
KUBERAY_SCHEMA = TEMPLATES / "kuberay" / "schema.yaml"
RAY = str(Path(sys.executable).with_name("ray"))


def init_templates(target: str, dest: Path) -> list[Path]:
    """Copy a launcher template (aws, gcp, onprem) or the KubeRay manifests (kuberay) into `dest`."""
    sources = (
        list(KUBERAY.values()) if target == "kuberay" else [LAUNCHER[target]] if target in LAUNCHER else []
    )
    if not sources:
        raise ConfigError(
            f"unknown cluster kind {target!r}: choose one of {', '.join([*LAUNCHER, 'kuberay'])}"
        )
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sources:
        out = dest / src.name
        if out.exists():
            raise ConfigError(f"{out} exists: remove it or pass another directory with --dest")
        shutil.copyfile(src, out)
        written.append(out)
    return written


def _load(path: Path) -> list[Any]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None


def _where(err: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in err.absolute_path) or "(top level)"


def validate_launcher(path: Path) -> dict[str, Any]:
    """Ray's own checks of a cluster-launcher config; returns the config with Ray's defaults filled in."""
    from ray.autoscaler._private.util import prepare_config, validate_config

    docs = _load(path)
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ConfigError(f"{path}: expected one mapping (a Ray cluster-launcher config)")
    # Ray logs its fill-ins ("setting max workers for head node type to 0") at INFO: not ours to show.
    ray_log = logging.getLogger("ray.autoscaler")
    level = ray_log.level
    ray_log.setLevel(logging.WARNING)
    try:
        prepared = prepare_config(docs[0])
        validate_config(prepared)
    except jsonschema.ValidationError as e:
        raise ConfigError(f"{path}: {_where(e)}: {e.message} (Ray's cluster-launcher schema)") from None
    except (Exception, SystemExit) as e:  # Ray reports config faults with many types, even exit
        raise ConfigError(f"{path}: Ray rejects this cluster config: {type(e).__name__}: {e}") from None
    finally:
        ray_log.setLevel(level)
    return prepared


def validate_kuberay(path: Path) -> list[dict[str, Any]]:
    """Every document of a KubeRay manifest checked against Silva's ray.io/v1 schema."""
    schema = yaml.safe_load(KUBERAY_SCHEMA.read_text())
    # One branch per kind, so every problem of a RayCluster is listed (oneOf would report one).
    branches = {b["properties"]["kind"]["const"]: {"$defs": schema["$defs"], **b} for b in schema["oneOf"]}
    docs = _load(path)
    if not docs:
        raise ConfigError(f"{path}: no manifest in the file")
    for i, doc in enumerate(docs):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind not in branches:
            raise ConfigError(
                f"{path}: document {i + 1}: kind {kind!r}; expected one of {', '.join(branches)}"
            )
        validator = jsonschema.Draft202012Validator(branches[kind])
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            detail = "\n".join(f"  {_where(e)}: {e.message}" for e in errors[:10])
            raise ConfigError(f"{path}: document {i + 1} is not a valid ray.io/v1 {kind}:\n{detail}")
    return docs


def _is_kuberay(docs: list[Any]) -> bool:
    first = docs[0] if docs else None
    return isinstance(first, dict) and str(first.get("apiVersion", "")).startswith("ray.io/")


def validate(path: Path) -> str:
    """Check a cluster file of either kind; returns which kind it is."""
    if _is_kuberay(_load(path)):
        validate_kuberay(path)
        return "kuberay"
    validate_launcher(path)
    return "launcher"


def _aws_ready() -> None:
    try:
        import boto3
    except ImportError:
        raise EnvironmentFailure(
            "Ray's AWS launcher needs boto3, which is not installed: pip install 'silva[aws]'"
        ) from None
    if boto3.Session().get_credentials() is None:
        raise EnvironmentFailure(
            "no AWS credentials found: run `aws configure`, or set AWS_PROFILE "
            "(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
        )


def _gcp_ready() -> None:
    try:
        import google.auth
        import googleapiclient.discovery  # noqa: F401  what Ray's GCP launcher imports
    except ImportError:
        raise EnvironmentFailure(
            "Ray's GCP launcher needs the Google API client, which is not installed: pip install 'silva[gcp]'"
        ) from None
    try:
        google.auth.default()
    except google.auth.exceptions.DefaultCredentialsError as e:
        raise EnvironmentFailure(
            f"no Google Cloud credentials: {str(e).splitlines()[0][:200]} "
            "Run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS "
            "to a service account's key file"
        ) from None


# What each provider needs on this machine before `ray up`/`ray down` can talk to it.
PROVIDER_CHECKS = {"aws": _aws_ready, "gcp": _gcp_ready}


def preflight(path: Path, command: str, *, yes: bool, interactive: bool) -> None:
    """Check what `ray up`/`ray down` would otherwise fail on with a stack trace: the kind of
    file, the provider's client library and credentials, and a terminal to confirm on."""
    docs = _load(path)
    if _is_kuberay(docs):
        raise ConfigError(
            f"{path} is a KubeRay manifest ({docs[0].get('kind')}), not a cluster-launcher config: "
            f"apply it with `kubectl apply -f {path}` (and `kubectl delete -f` to remove it)"
        )
    provider = validate_launcher(path)["provider"]["type"]
    if not yes and not interactive:
        raise ConfigError(
            f"`silva cluster {command}` asks before it changes machines and there is no terminal "
            f"to ask on: pass --yes (silva cluster {command} {path} --yes)"
        )
    check = PROVIDER_CHECKS.get(provider)
    if check is not None:
        check()


def ray_cli(*args: str) -> int:
    """Run Ray's own CLI (`ray up`, `ray down`...) in the foreground; its exit code."""
    try:
        code = subprocess.run([RAY, *args]).returncode
    except FileNotFoundError:
        raise EnvironmentFailure(f"Ray's command-line tool is not at {RAY}: install ray[default]") from None
    if code != 0:
        # Ray printed its own account above; what failed is the cluster or the cloud, not Silva.
        raise EnvironmentFailure(f"`ray {' '.join(args)}` failed with exit code {code} (its output is above)")
    return 0
