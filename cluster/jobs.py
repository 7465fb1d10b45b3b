"""Runs submitted to a cluster through the Ray Jobs API (`JobSubmissionClient`).

`submit` stages a working directory (the run config, its template or idea files, and any extra
data), rewritten so that paths are relative to it and the driver joins the cluster it runs on
(`executor.address: auto`); Ray uploads the directory with the job. The run directory itself goes
to `output_dir`, which must be shared storage of the cluster: the job's working directory is
private to the job and goes away with it, a run directory must survive the driver to be resumed.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from engine.config import load_yaml
from engine.errors import ConfigError, EnvironmentFailure, SilvaError

STAGED_CONFIG = "run.yaml"
RUN_DIR_LINE = re.compile(r"^(?:run directory|resuming):?\s+(\S+)", re.MULTILINE)
# JobSubmissionClient's working_dir upload limit is 100 MiB (Ray's own check raises after zipping).
MAX_UPLOAD_MB = 100


class JobState(BaseModel):
    job_id: str
    status: str  # PENDING | RUNNING | STOPPED | SUCCEEDED | FAILED
    message: str = ""
    entrypoint: str = ""
    run_dir: str | None = None  # from the driver's first lines, once printed


# Ray's SDK logs each upload and the end of a log stream at INFO on the user's terminal.
QUIET_LOGGERS = ("ray.dashboard.modules", "ray._private.runtime_env")


def client(address: str) -> Any:
    from ray.job_submission import JobSubmissionClient

    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)

    from ray.exceptions import AuthenticationError

    try:
        return JobSubmissionClient(address)
    except AuthenticationError:
        raise EnvironmentFailure(
            f"the Ray cluster at {address} wants its token: set RAY_AUTH_MODE=token, with the "
            "cluster's token in ~/.ray/auth_token or RAY_AUTH_TOKEN"
        ) from None
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise SilvaError(
            f"no Ray Jobs API at {address}: {str(e).splitlines()[0][:300]}\n"
            "Pass the dashboard address of the head (`ray dashboard CLUSTER.yaml` forwards it to "
            "http://127.0.0.1:8265; on Kubernetes `kubectl port-forward svc/silva-head-svc 8265`)."
        ) from None


def _copy(src: Path, dest_dir: Path, name: str) -> str:
    target = dest_dir / name
    if src.is_dir():
        shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".git"))
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    return name


def stage(config_path: Path, output_dir: str, include: list[Path], dest: Path) -> Path:
    """Write the working directory of a submitted run into `dest`; returns the staged config."""
    data = load_yaml(config_path)
    if not isinstance(data, dict):
        raise ConfigError(f"{config_path}: expected a mapping of settings at the top level")
    base = config_path.resolve().parent
    if data.get("template"):
        data["template"] = _copy(base / data["template"], dest, "template")
    if data.get("idea"):
        data["idea"] = _copy(base / data["idea"], dest, f"ideas/{Path(data['idea']).name}")
    ideas = []
    for i, item in enumerate(data.get("ideas") or []):
        entry = dict(item) if isinstance(item, dict) else {"path": item}
        entry["path"] = _copy(base / entry["path"], dest, f"ideas/{i}-{Path(entry['path']).name}")
        ideas.append(entry)
    if ideas:
        data["ideas"] = ideas
    if data.get("scripted_fn") and ".py:" in data["scripted_fn"]:
        file, _, fn = data["scripted_fn"].rpartition(":")
        data["scripted_fn"] = f"{_copy(base / file, dest, 'scripted/' + Path(file).name)}:{fn}"
    for extra in include:
        _copy(extra.resolve(), dest, extra.name)
    data["output_dir"] = output_dir
    data["executor"] = {**(data.get("executor") or {}), "kind": "ray", "address": "auto"}
    out = dest / STAGED_CONFIG
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    size_mb = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file()) / 2**20
    if size_mb > MAX_UPLOAD_MB:
        raise ConfigError(
            f"the staged working directory is {size_mb:.0f} MB, over the Jobs API's {MAX_UPLOAD_MB} MB: "
            "put large data on the cluster's shared storage and point the idea or template at it"
        )
    return out


def submit(
    address: str, config_path: Path, *, output_dir: str, include: list[Path], resume: str | None = None
) -> str:
    """Submit a run (or `silva resume RUN_DIR` with `resume`); returns the Ray job id."""
    if not output_dir.startswith("/") and "://" not in output_dir:
        raise ConfigError(
            f"--output-dir {output_dir!r}: give an absolute path on the cluster's shared storage "
            "(e.g. /shared/runs): a job's working directory disappears with the job"
        )
    jobs = client(address)
    with tempfile.TemporaryDirectory(prefix="silva-submit-") as tmp:
        work = Path(tmp)
        if resume is None:
            stage(config_path, output_dir, include, work)
            entrypoint = f"silva run {STAGED_CONFIG}"
        else:
            for extra in include:
                _copy(extra.resolve(), work, extra.name)
            entrypoint = f"silva resume {resume}"
        return str(
            jobs.submit_job(
                entrypoint=entrypoint,
                runtime_env={"working_dir": str(work)},
                metadata={"silva": "run" if resume is None else "resume", "config": config_path.name},
            )
        )


def _status(status: Any) -> str:
    return str(getattr(status, "value", status))  # JobStatus is a str Enum


def state(address: str, job_id: str) -> JobState:
    jobs = client(address)
    info = jobs.get_job_info(job_id)
    found = RUN_DIR_LINE.search(jobs.get_job_logs(job_id) or "")
    return JobState(
        job_id=job_id,
        status=_status(info.status),
        message=info.message or "",
        entrypoint=info.entrypoint or "",
        run_dir=found.group(1) if found else None,
    )


def list_runs(address: str) -> list[JobState]:
    """The Silva jobs the cluster knows, newest first."""
    out = []
    for info in client(address).list_jobs():
        if (info.metadata or {}).get("silva") and info.submission_id:
            out.append(
                (
                    info.start_time or 0,
                    JobState(
                        job_id=info.submission_id,
                        status=_status(info.status),
                        message=info.message or "",
                        entrypoint=info.entrypoint or "",
                    ),
                )
            )
    return [s for _, s in sorted(out, key=lambda t: -t[0])]


def logs(address: str, job_id: str, *, follow: bool) -> Iterator[str]:
    jobs = client(address)
    if not follow:
        yield jobs.get_job_logs(job_id)
        return
    import asyncio

    # tail_job_logs is an async generator that ends when the job does; bridge it chunk by chunk.
    agen = jobs.tail_job_logs(job_id)
    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                yield loop.run_until_complete(agen.__anext__())
            except StopAsyncIteration:
                return
    finally:
        loop.close()
