"""What a fresh local sandbox no longer rebuilds: matplotlib's font cache, built once and shared
read-only, in a config directory that stays the sandbox's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import Limits, SandboxProvider, get_provider, local, none, warm
from sandbox import docker_provider as docker_module
from sandbox.docker_provider import DockerProvider, DockerSandbox

PROBE = """
import os, pathlib
import matplotlib.pyplot as plt
plt.figure()
config = pathlib.Path(os.environ["MPLCONFIGDIR"])
(config / "mine.txt").write_text("x")  # the directory is the sandbox's own
(shared,) = config.glob("fontlist-v*.json")
try:
    shared.write_text("{}")
except OSError as e:
    print("cache read-only:", e.strerror)
"""


def run_probe_twice(provider: SandboxProvider, tmp_path: Path) -> None:
    for i in range(2):
        box = provider.open(tmp_path / f"attempt-{i}")
        try:
            res = box.exec(["python3", "-c", PROBE], limits=Limits(wall_s=300))
        finally:
            box.close()
        assert res.exit_code == 0, res.stderr
        assert "building the font cache" not in res.stderr
        assert "cache read-only: Read-only file system" in res.stdout


@pytest.mark.slow
def test_fresh_sandboxes_share_one_prebuilt_font_cache_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(warm, "CACHE_ROOT", tmp_path / "cache")
    monkeypatch.setattr(local, "_PROBED", {})
    provider = get_provider("local")
    provider.check()
    (built,) = (tmp_path / "cache").glob("mpl-*/fontlist-v*.json")
    before = built.read_bytes()
    run_probe_twice(provider, tmp_path)
    assert built.read_bytes() == before


@pytest.mark.docker
@pytest.mark.slow
def test_containers_share_the_images_prebuilt_font_cache_read_only(
    docker_provider: DockerProvider, tmp_path: Path
) -> None:
    run_probe_twice(docker_provider, tmp_path)


def test_a_containers_config_dir_is_its_own_tmpfs_with_the_cache_bound_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "fontlist-v3.11.0.json"
    cache.write_text("{}")
    monkeypatch.setitem(docker_module._FONT_CACHES, (None, "img:tag"), cache)
    box = DockerSandbox(DockerProvider(image="img:tag"), tmp_path / "ws", ())
    cfg = box.container_config(["true"], Limits(disk_mb=64), {})
    assert cfg["tmpfs"] == {"/tmp": "size=64m,mode=1777", "/tmp/matplotlib": "size=8m,mode=1777"}
    (bound,) = [m for m in cfg["mounts"] if m["Target"].startswith("/tmp/matplotlib/")]
    assert (bound["Target"], bound["Source"], bound["ReadOnly"]) == (
        "/tmp/matplotlib/fontlist-v3.11.0.json",
        str(cache),
        True,
    )


def test_a_cache_directory_that_cannot_be_written_means_no_warm_start_not_a_failure(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the cache directory would go: mkdir fails

    def build(workspace: Path) -> None:
        (workspace / "mpl").mkdir(parents=True)
        (workspace / "mpl" / "fontlist-v3.11.0.json").write_text("{}")

    assert warm.font_cache("key", build, root=blocked) is None
    stored = warm.font_cache("key", build, root=tmp_path / "ok")
    assert stored is not None and stored.read_text() == "{}" and stored.stat().st_mode & 0o777 == 0o644


UNSANDBOXED_PROBE = """
import os, pathlib
import matplotlib.pyplot as plt
plt.figure()
(copy,) = pathlib.Path(os.environ["MPLCONFIGDIR"]).glob("fontlist-v*.json")
copy.write_text("{}")  # the attempt's own copy: the next attempt must not see this
print(pathlib.Path(os.environ["MPLCONFIGDIR"]).is_relative_to(pathlib.Path.cwd()))
"""


@pytest.mark.slow
def test_unsandboxed_workspaces_start_from_their_own_copy_of_one_prebuilt_font_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(warm, "CACHE_ROOT", tmp_path / "cache")
    none.shared_font_cache.cache_clear()
    try:
        provider = get_provider("none")
        for i in range(2):
            box = provider.open(tmp_path / f"attempt-{i}")
            res = box.exec(["python3", "-c", UNSANDBOXED_PROBE], limits=Limits(wall_s=300))
            assert res.exit_code == 0, res.stderr
            assert "building the font cache" not in res.stderr and res.stdout == "True\n"
        (built,) = (tmp_path / "cache").glob("mpl-*/fontlist-v*.json")
        assert built.read_text() != "{}"
    finally:
        none.shared_font_cache.cache_clear()
