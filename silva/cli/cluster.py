"""`silva cluster ...`: get a cluster with Ray's own tools, submit runs to it, follow them.

init/validate/up/down work on cluster-launcher configs (aws, gcp, onprem) and KubeRay manifests;
submit/status/logs talk to a running cluster's Ray Jobs API; sync mirrors run directories to
object storage; image builds the node image. See docs/cluster.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

cluster_app = typer.Typer(help="Launch a Ray cluster, submit runs to it, follow them.", no_args_is_help=True)
ADDRESS = typer.Option(
    "http://127.0.0.1:8265",
    "--address",
    "-a",
    envvar=["SILVA_CLUSTER_ADDRESS", "RAY_API_SERVER_ADDRESS"],
    help="Ray Jobs API of the head (its dashboard address)",
)


@cluster_app.command("init")
def init(
    kind: str = typer.Argument(..., help="aws | gcp | onprem | kuberay"),
    dest: Path = typer.Option(Path("."), "--dest", help="directory to write the template(s) into"),
) -> int:
    """Write a cluster template to edit: a launcher config, or KubeRay's RayCluster and RayJob."""
    from cluster.launch import init_templates

    for path in init_templates(kind, dest):
        print(f"wrote {path}")
    print("edit the lines marked EDIT, then `silva cluster validate FILE`")
    return 0


@cluster_app.command("validate")
def validate(path: Path = typer.Argument(..., help="cluster-launcher YAML or KubeRay manifest")) -> int:
    """Check a cluster file with Ray's own config validation (launcher) or the ray.io/v1 schema (KubeRay)."""
    from cluster.launch import validate as check

    kind = check(path)
    print(f"{path}: valid {'KubeRay manifest' if kind == 'kuberay' else 'Ray cluster-launcher config'}")
    return 0


@cluster_app.command("up")
def up(
    path: Path = typer.Argument(..., help="cluster-launcher YAML"),
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask before creating machines"),
) -> int:
    """Validate, then start or update the cluster with `ray up`."""
    from cluster.launch import preflight, ray_cli

    preflight(path, "up", yes=yes, interactive=sys.stdin.isatty())
    return ray_cli("up", str(path), *(["-y"] if yes else []))


@cluster_app.command("down")
def down(
    path: Path = typer.Argument(..., help="cluster-launcher YAML"),
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask before terminating machines"),
) -> int:
    """Tear the cluster down with `ray down` (run directories on shared storage stay)."""
    from cluster.launch import preflight, ray_cli

    preflight(path, "down", yes=yes, interactive=sys.stdin.isatty())
    return ray_cli("down", str(path), *(["-y"] if yes else []))


@cluster_app.command("image")
def image(tag: str = typer.Option("", "--tag", help="image tag (default silva-node:ray<version>)")) -> int:
    """Build the node image offline: debootstrap base, Ray and Silva from this checkout."""
    from cluster.image import DEFAULT_TAG, ensure_node_image

    print(f"built {ensure_node_image(tag or DEFAULT_TAG, quiet=False)}")
    return 0


@cluster_app.command("submit")
def submit(
    config: Path = typer.Argument(..., help="run config (YAML)"),
    output_dir: str = typer.Option(
        ..., "--output-dir", "-o", help="run directories on the cluster's shared storage"
    ),
    include: list[Path] = typer.Option([], "--include", help="extra file or directory for the job (data)"),
    resume: str = typer.Option("", "--resume", help="resume this run directory (on the cluster) instead"),
    address: str = ADDRESS,
) -> int:
    """Submit a run through the Ray Jobs API with its template or ideas; prints the job id."""
    from cluster import jobs
    from silva.config import load_config

    if not resume:
        load_config(config)  # every config error here, before anything is uploaded
    job_id = jobs.submit(address, config, output_dir=output_dir, include=include, resume=resume or None)
    print(job_id)
    print(f"follow: silva cluster logs {job_id} --follow   status: silva cluster status {job_id}")
    return 0


@cluster_app.command("status")
def status(
    job_id: str = typer.Argument("", help="a job id from `silva cluster submit`; none lists them"),
    address: str = ADDRESS,
) -> int:
    """A submitted run's state and run directory, or the list of Silva jobs on the cluster."""
    from cluster import jobs

    console = Console(soft_wrap=True, highlight=False)
    if not job_id:
        for s in jobs.list_runs(address):
            console.print(f"{s.job_id}  {s.status:<9}  {s.entrypoint}")
        return 0
    s = jobs.state(address, job_id)
    console.print(f"{s.job_id}: {s.status}" + (f" ({s.message})" if s.message else ""))
    if s.run_dir:
        console.print(
            f"run directory: {s.run_dir}\nprogress: silva status {s.run_dir}   (where the shared storage is "
            "mounted)"
        )
    return 0


@cluster_app.command("logs")
def logs(
    job_id: str = typer.Argument(...),
    address: str = ADDRESS,
    follow: bool = typer.Option(False, "--follow", "-f", help="stream until the job ends"),
) -> int:
    """The driver's output of a submitted run."""
    from cluster import jobs

    for chunk in jobs.logs(address, job_id, follow=follow):
        print(chunk, end="", flush=True)
    return 0


@cluster_app.command("sync")
def sync(
    source: str = typer.Argument(..., help="run directory or URL"),
    destination: str = typer.Argument(..., help="URL (s3://bucket/prefix, gs://...) or directory"),
    only: list[str] = typer.Option([], "--only", help="journal | artifacts | papers (repeatable)"),
) -> int:
    """Copy a run directory to object storage (or back); only what changed since the last sync."""
    from cluster.storage import sync as do_sync

    report = do_sync(source, destination, only)
    print(f"copied {report.copied} file(s), {report.bytes} bytes; {report.skipped} already there")
    return 0


def register(app: typer.Typer) -> None:
    app.add_typer(cluster_app, name="cluster")
