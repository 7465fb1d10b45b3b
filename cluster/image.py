"""Silva's Ray node image, built offline (cluster/images/build_node.sh) from this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ray

from engine.errors import SilvaError

BUILD_SCRIPT = Path(__file__).resolve().parent / "images" / "build_node.sh"
SOURCE = Path(__file__).resolve().parents[1]
DEFAULT_TAG = f"silva-node:ray{ray.__version__}"


class ImageBuildError(SilvaError):
    """The node image could not be built (no root, no debootstrap, no network to PyPI...)."""


def ensure_node_image(tag: str = DEFAULT_TAG, source: Path = SOURCE, *, quiet: bool = True) -> str:
    """Build `tag` unless it is already built from this source; Ray pinned to this driver's version."""
    env = {"SILVA_RAY_VERSION": ray.__version__, "PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT), tag, str(source)],
        env={**os.environ, **env},
        capture_output=quiet,
        text=True,
    )
    if result.returncode != 0:
        detail = f"\n{(result.stdout or '')[-2000:]}{(result.stderr or '')[-4000:]}" if quiet else ""
        raise ImageBuildError(f"building the node image {tag} failed (exit {result.returncode}){detail}")
    return tag
