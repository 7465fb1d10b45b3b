"""Run directories mirrored to object storage (s3://, gs://, or any fsspec protocol).

A run directory lives on a path every node sees (NFS, EFS, Filestore, a PVC); this copies it, or
its journal, artifacts and papers, to a bucket for keeping and sharing, and back. Files travel by
path through pyarrow's filesystems (S3 and GCS are built into pyarrow; any other fsspec protocol
is wrapped with `FSSpecHandler`), never through Ray's object store. A sync is incremental: a file
whose size and modification time already match at the destination is skipped, so syncing a
growing run every few minutes copies little more than the journal's tail.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pyarrow.fs as pafs
from pydantic import BaseModel

from engine.errors import ConfigError

NATIVE = {"s3", "gs", "gcs", "file", "hdfs", "viewfs", "abfs", "abfss"}
# What `sync --only` can pick: the journal and what a reader of the run wants.
PARTS = {
    "journal": ("events.jsonl", "config.yaml", "llm_ledger.jsonl"),
    "artifacts": ("nodes",),
    "papers": ("writeup", "review"),
}


class SyncReport(BaseModel):
    copied: int = 0
    skipped: int = 0
    bytes: int = 0


def filesystem(url: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the path inside it for `url`; `endpoint_override`, `region`... as query."""
    parsed = urlparse(url)
    if parsed.scheme in NATIVE or not parsed.scheme:
        try:
            fs, path = pafs.FileSystem.from_uri(url if parsed.scheme else str(Path(url).resolve()))
        except (ValueError, OSError) as e:  # pyarrow.ArrowInvalid is a ValueError
            raise ConfigError(f"{url}: cannot open this storage URL: {e}") from None
        return fs, path.rstrip("/")
    try:
        import fsspec
    except ImportError:
        raise ConfigError(
            f"{url}: the {parsed.scheme}:// protocol needs fsspec (pip install 'silva[cluster]')"
        ) from None
    options = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    try:
        fs = fsspec.filesystem(parsed.scheme, **options)
    except (ImportError, ValueError) as e:
        raise ConfigError(f"{url}: fsspec has no usable {parsed.scheme!r} filesystem here: {e}") from None
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), f"{parsed.netloc}{parsed.path}".rstrip("/")


def _listing(fs: pafs.FileSystem, root: str, parts: Iterable[str]) -> dict[str, pafs.FileInfo]:
    out: dict[str, pafs.FileInfo] = {}
    for part in parts:
        base = f"{root}/{part}" if part else root
        info = fs.get_file_info(base)
        if info.type == pafs.FileType.File:
            out[part] = info
        elif info.type == pafs.FileType.Directory:
            for f in fs.get_file_info(pafs.FileSelector(base, recursive=True)):
                if f.type == pafs.FileType.File:  # fsspec filesystems may list with a leading "/"
                    out[f.path.lstrip("/")[len(root.lstrip("/")) + 1 :]] = f
    return out


def sync(source: str, destination: str, only: Iterable[str] = ()) -> SyncReport:
    """Copy the run directory at `source` to `destination` (either may be local or a URL)."""
    unknown = sorted(set(only) - set(PARTS))
    if unknown:
        raise ConfigError(f"--only {', '.join(unknown)}: choose from {', '.join(PARTS)}")
    parts = [p for name in only for p in PARTS[name]] or [""]
    src_fs, src_root = filesystem(source)
    dst_fs, dst_root = filesystem(destination)
    if src_fs.get_file_info(src_root).type == pafs.FileType.NotFound:
        raise ConfigError(f"{source}: nothing there to sync")
    present = _listing(dst_fs, dst_root, parts)
    report = SyncReport()
    for rel, info in sorted(_listing(src_fs, src_root, parts).items()):
        there = present.get(rel)
        # Object stores set their own mtime on upload, to the second: equal size and a destination
        # no older than the source's second means this version is already there. (Run files are
        # written once or appended to, so a change always changes the size too.)
        fresh = there is not None and (there.mtime_ns or 0) >= (info.mtime_ns or 0) // 10**9 * 10**9
        if there is not None and there.size == info.size and fresh:
            report.skipped += 1
            continue
        target = f"{dst_root}/{rel}"
        dst_fs.create_dir(target.rpartition("/")[0], recursive=True)
        pafs.copy_files(f"{src_root}/{rel}", target, source_filesystem=src_fs, destination_filesystem=dst_fs)
        report.copied += 1
        report.bytes += info.size or 0
    return report
