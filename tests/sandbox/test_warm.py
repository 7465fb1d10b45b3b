"""What a fresh local sandbox no longer rebuilds: matplotlib's font cache, built once and shared
read-only, in a config directory that stays the sandbox's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import Limits, get_provider, local, warm

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
    for i in range(2):
        box = provider.open(tmp_path / f"attempt-{i}")
        try:
            res = box.exec(["python3", "-c", PROBE], limits=Limits(wall_s=300))
        finally:
            box.close()
        assert res.exit_code == 0, res.stderr
        assert "building the font cache" not in res.stderr
        assert "cache read-only: Read-only file system" in res.stdout
    assert built.read_bytes() == before
