"""Headless Chromium (the Debian `chromium` package) driven by Playwright, for the view's tests."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"


@dataclass
class Watched:
    """A page and everything that went wrong on it."""

    page: Any
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def check(self) -> None:
        assert not self.failed, f"failed requests: {self.failed}"
        assert not self.errors, f"page errors: {self.errors}"


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless Chromium, for a module's tests to share (a launch costs seconds)."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.fail("headless Chromium is missing: `make system-deps` installs the Debian package `chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            args=["--no-sandbox"],
        )
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def browser_page(browser: Any = None, width: int = 1500, height: int = 1000) -> Iterator[Watched]:
    """A fresh page (its own context: no cookies or cache carried over) on `browser`, or on a
    Chromium launched for it alone."""
    if browser is None:
        with chromium() as own, browser_page(own, width, height) as w:
            yield w
        return
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        w = Watched(page)
        page.on("requestfailed", lambda r: w.failed.append(f"{r.url} ({r.failure})"))
        page.on(
            "response",
            lambda r: w.failed.append(f"{r.url} (HTTP {r.status})") if r.status >= 400 else None,
        )
        page.on("pageerror", lambda e: w.errors.append(str(e)))
        page.on("console", lambda m: w.errors.append(m.text) if m.type == "error" else None)
        yield w
    finally:
        page.context.close()


def not_blank(png: Path) -> dict[str, int]:
    """Pixel counts of the page's status colours; raises if the screenshot is (nearly) one colour."""
    from PIL import Image

    img = Image.open(png).convert("RGB")
    small = img.resize((img.width // 2, img.height // 2))
    colours = small.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 50, f"{png}: only {len(colours)} colours: a blank page"
    counts = {"good": 0, "buggy": 0}
    targets = {"good": (0x2E, 0x9D, 0x4F), "buggy": (0xD6, 0x45, 0x45)}
    for n, rgb in colours:  # RGB: a tuple per colour
        assert isinstance(rgb, tuple)
        for name, t in targets.items():
            if sum(abs(a - b) for a, b in zip(rgb, t)) < 30:
                counts[name] += n
    return counts
