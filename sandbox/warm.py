"""Caches every fresh sandbox would otherwise rebuild, built once per host and shared read-only.

Matplotlib scans the system's fonts into `fontlist-v*.json` in its config directory when the file
is missing: 1-15 s per attempt in a sandbox whose /tmp starts empty (seen at load 2-37 on 2
cores). The file is built once, by the same sandbox with the same interpreter (so every font path
in it is a path the sandbox sees), stored under the user's cache directory, and bound read-only
into each sandbox's otherwise private, writable MPLCONFIGDIR: an experiment reads it and cannot
change what the next one reads. Bytecode needs no such step: pip compiles a package's modules
when it installs them, and the sandbox binds the interpreter's prefixes read-only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

MPL_DIR = "/tmp/matplotlib"  # MPLCONFIGDIR inside a sandbox: on its private /tmp
BUILD_FONT_CACHE = ["python3", "-c", "import matplotlib.font_manager"]
CACHE_ROOT = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "silva" / "sandbox"


def interpreter_key(python: str) -> str:
    """What a font cache built with a host interpreter depends on: the interpreter, its matplotlib."""
    try:
        version = metadata.version("matplotlib")
    except metadata.PackageNotFoundError:
        version = "none"
    return f"{os.path.realpath(python)}|{version}"


def font_cache(key: str, build: Callable[[Path], None], root: Path | None = None) -> Path | None:
    """The shared font cache file for the environment `key` names (an interpreter, an image id),
    built by `build(workspace)` if missing: it runs BUILD_FONT_CACHE in a sandbox on `workspace`
    with MPLCONFIGDIR at the sandbox's view of `workspace/mpl`. None when there is no matplotlib."""
    folder = (root or CACHE_ROOT) / f"mpl-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    found = sorted(folder.glob("fontlist-v*.json")) if folder.is_dir() else []
    if found:
        return found[-1]
    with tempfile.TemporaryDirectory(prefix="silva-warm-") as tmp:
        workspace = Path(tmp) / "workspace"
        build(workspace)
        config_dir = workspace / "mpl"
        built = sorted(config_dir.glob("fontlist-v*.json")) if config_dir.is_dir() else []
        if not built:
            return None
        target = folder / built[-1].name
        partial = folder / f".{target.name}.{os.getpid()}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built[-1], partial)
            os.chmod(partial, 0o644)  # read by the sandbox's uid through the bind
            os.replace(partial, target)  # parallel workers may race: each rename is whole
        except OSError:
            return None  # a home without room or write access: sandboxes rebuild, as before
    return target
