"""Figure checks: duplicated figures (exact or perceptual hash), figures the text never refers
to, and figures whose text would print too small to read.

With the LaTeX source the figure files themselves are examined; with only a PDF, the images
embedded in it (poppler's pdfimages)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from review.integrity.latex import LABEL, Source
from review.integrity.report import CheckResult, Finding
from review.paper import Paper, require_tools

_GRAPHICS = re.compile(r"\\includegraphics\s*(?:\[([^\]]*)\])?\s*\{([^}]*)\}")
_FIGURE_ENV = re.compile(r"\\begin\{figure\*?\}(.*?)\\end\{figure\*?\}", re.DOTALL)
_CAPTION = re.compile(r"\\caption\{([^}]*)")
_EXTENSIONS = ("", ".pdf", ".png", ".jpg", ".jpeg")
_LENGTH = re.compile(
    r"width\s*=\s*([\d.]*)\s*\\(linewidth|textwidth|columnwidth|hsize)"
    r"|width\s*=\s*([\d.]+)\s*(in|cm|mm|pt|bp)|scale\s*=\s*([\d.]+)"
)
_UNIT_IN = {"in": 1.0, "cm": 1 / 2.54, "mm": 1 / 25.4, "pt": 1 / 72.27, "bp": 1 / 72}
_PDF_CAPTION = re.compile(r"^\s*(?:Figure|Fig\.)\s+(\d+)\s*[:.]", re.MULTILINE)
_PDF_MENTION = re.compile(r"(?:Figure|Fig\.|Figures)\s+(\d+)")

PHASH_SIZE = 16  # 256-bit perceptual hashes: plots share white space and axes, so 64 bits is too coarse
NEAR_DUPLICATE_BITS = 12  # of 256: two line plots of one style differ in ~50, a resized or noised copy in 2-4
ASSUMED_SOURCE_DPI = 100.0  # matplotlib's default, for images known only from the PDF
FIGURE_FONT_PT = 10.0  # matplotlib's default text size
MIN_DPI = 100.0  # raster figures below this look blurred in print
MIN_IMAGE_PX = 32  # smaller embedded images are icons or rules, not figures


@dataclass(frozen=True)
class Graphic:
    name: str  # as written in \includegraphics, or the extracted image's name
    path: Path | None
    options: str = ""


def graphics(src: Source) -> list[Graphic]:
    out = []
    for m in _GRAPHICS.finditer(src.text):
        ref = m.group(2).strip()
        path = next(
            (src.directory / (ref + ext) for ext in _EXTENSIONS if (src.directory / (ref + ext)).is_file()),
            None,
        )
        out.append(Graphic(ref, path, m.group(1) or ""))
    return out


def _raster(path: Path, tmp: Path) -> Path:
    """A PNG of the figure: itself, or the first page of a PDF figure rendered by pdftoppm."""
    if path.suffix.lower() != ".pdf":
        return path
    require_tools("pdftoppm")
    out = tmp / hashlib.sha1(str(path).encode()).hexdigest()
    subprocess.run(
        ["pdftoppm", "-png", "-r", "50", "-singlefile", str(path), str(out)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return out.with_suffix(".png")


@dataclass(frozen=True)
class _Embedded:
    page: int
    num: int
    width_px: int
    x_ppi: float


def _embedded_list(pdf: Path) -> list[_Embedded]:
    """Images drawn in the PDF (`pdfimages -list`), without their soft masks (alpha channels)."""
    require_tools("pdfimages")
    lines = subprocess.run(
        ["pdfimages", "-list", str(pdf)], check=True, capture_output=True, text=True, timeout=120
    ).stdout.splitlines()[2:]
    rows = [r.split() for r in lines]
    return [
        _Embedded(int(r[0]), int(r[1]), int(r[3]), float(r[12]))
        for r in rows
        if len(r) >= 14 and r[2] == "image"
    ]


def _embedded_images(pdf: Path, tmp: Path) -> list[Graphic]:
    subprocess.run(
        ["pdfimages", "-png", "-p", str(pdf), str(tmp / "img")], check=True, capture_output=True, timeout=120
    )
    return [
        Graphic(f"image {e.num} on page {e.page}", tmp / f"img-{e.page:03d}-{e.num:03d}.png")
        for e in _embedded_list(pdf)
    ]


def duplicate_figures(paper: Paper) -> CheckResult:
    import imagehash
    from PIL import Image

    name = "duplicate_figures"
    src = Source.of(paper)
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory(prefix="silva-figs-") as tmp_name:
        tmp = Path(tmp_name)
        if src is not None:
            found = graphics(src)
            missing = [g.name for g in found if g.path is None]
            findings += [
                Finding(message=f"figure file {n!r} not found", where=f"\\includegraphics{{{n}}}")
                for n in missing
            ]
            items, detail = [g for g in found if g.path is not None], "figure files named in the LaTeX source"
        elif paper.pdf is not None:
            items, detail = _embedded_images(paper.pdf, tmp), "images embedded in the PDF"
        else:
            return CheckResult.skipped(name, "no LaTeX source and no PDF")
        hashes = []
        for g in items:
            assert g.path is not None
            with Image.open(_raster(g.path, tmp)) as img:
                if min(img.size) < MIN_IMAGE_PX:
                    continue
                hashes.append(
                    (g, hashlib.sha256(g.path.read_bytes()).hexdigest(), imagehash.phash(img, PHASH_SIZE))
                )
    for (a, sha_a, ph_a), (b, sha_b, ph_b) in combinations(hashes, 2):
        if a.path == b.path:
            findings.append(Finding(message=f"{a.name!r} is included twice", where=a.name))
        elif sha_a == sha_b:
            findings.append(
                Finding(
                    message=f"{a.name!r} and {b.name!r} are the same file content",
                    where=f"{a.name}, {b.name}",
                )
            )
        elif (distance := ph_a - ph_b) <= NEAR_DUPLICATE_BITS:
            findings.append(
                Finding(
                    message=f"{a.name!r} and {b.name!r} look the same (perceptual hash differs in "
                    f"{distance} of {PHASH_SIZE**2} bits)",
                    where=f"{a.name}, {b.name}",
                )
            )
    return CheckResult.of(name, findings, f"{len(hashes)} {detail}, exact and perceptual hashes")


def unreferenced_figures(paper: Paper) -> CheckResult:
    name = "unreferenced_figures"
    src = Source.of(paper)
    findings = []
    if src is not None:
        refs = set(src.refs)
        envs = list(_FIGURE_ENV.finditer(src.text))
        for m in envs:
            body = m.group(1)
            cap = _CAPTION.search(body)
            caption = cap.group(1)[:60] if cap else "a figure without caption"
            labels = [m.group(1).strip() for m in LABEL.finditer(body)]
            if not labels:
                findings.append(
                    Finding(message="figure has no \\label, so the text cannot refer to it", where=caption)
                )
            elif not refs.intersection(labels):
                findings.append(
                    Finding(message=f"figure {labels[0]!r} is never referenced in the text", where=caption)
                )
        return CheckResult.of(name, findings, f"{len(envs)} figure environment(s) against \\ref and \\cref")
    if not paper.pages:
        return CheckResult.skipped(name, "no LaTeX source and no PDF text")
    text = paper.text
    captions = {int(m.group(1)): m for m in _PDF_CAPTION.finditer(text)}
    mentioned = {
        int(m.group(1))
        for m in _PDF_MENTION.finditer(text)
        if not any(c.start() <= m.start() < c.end() for c in captions.values())
    }
    findings = [
        Finding(message=f"Figure {n} is never referenced in the text", where=f"Figure {n}")
        for n in sorted(captions)
        if n not in mentioned
    ]
    return CheckResult.of(
        name, findings, f"{len(captions)} figure caption(s) in the PDF text against mentions"
    )


def _printed_width_in(options: str, natural_in: float, text_width_in: float) -> float | None:
    m = _LENGTH.search(options)
    if m is None:
        return None if "height" in options else natural_in
    if m.group(2):
        return float(m.group(1) or 1.0) * text_width_in
    if m.group(4):
        return float(m.group(3)) * _UNIT_IN[m.group(4)]
    return float(m.group(5)) * natural_in


def _natural_width(path: Path) -> tuple[float, float | None]:
    """(width in inches at the file's own size, pixels across or None for vector figures)."""
    if path.suffix.lower() == ".pdf":
        from pypdf import PdfReader

        return float(PdfReader(path).pages[0].mediabox.width) / 72.0, None
    from PIL import Image

    with Image.open(path) as img:
        dpi = float(img.info.get("dpi", (ASSUMED_SOURCE_DPI,))[0]) or ASSUMED_SOURCE_DPI
        return img.size[0] / dpi, float(img.size[0])


def figure_size(paper: Paper, text_width_in: float, min_font_pt: float) -> CheckResult:
    name = "figure_size"
    src = Source.of(paper)
    findings = []
    if src is not None:
        placed = [g for g in graphics(src) if g.path is not None]
        for g in placed:
            assert g.path is not None
            natural, pixels = _natural_width(g.path)
            printed = _printed_width_in(g.options, natural, text_width_in)
            if printed is None or natural <= 0:
                continue
            font = FIGURE_FONT_PT * printed / natural
            if font < min_font_pt:
                findings.append(
                    Finding(
                        message=f"its {FIGURE_FONT_PT:g} pt text prints at about {font:.1f} pt "
                        f"({printed:.2f} in wide, drawn {natural:.2f} in wide)",
                        where=g.name,
                    )
                )
            elif pixels is not None and pixels / printed < MIN_DPI:
                findings.append(
                    Finding(
                        message=f"raster figure prints at {pixels / printed:.0f} dpi (blurred)", where=g.name
                    )
                )
        return CheckResult.of(
            name,
            findings,
            f"{len(placed)} figure file(s) at their printed width ({text_width_in:g} in text width)",
        )
    if paper.pdf is None:
        return CheckResult.skipped(name, "no LaTeX source and no PDF")
    rows = _embedded_list(paper.pdf)
    for e in rows:
        if e.width_px < MIN_IMAGE_PX or e.x_ppi <= 0:
            continue
        font = FIGURE_FONT_PT * ASSUMED_SOURCE_DPI / e.x_ppi
        if font < min_font_pt:
            findings.append(
                Finding(
                    message=f"an image printed at {e.x_ppi:.0f} ppi: text drawn at {FIGURE_FONT_PT:g} pt "
                    f"and {ASSUMED_SOURCE_DPI:g} dpi prints at about {font:.1f} pt",
                    where=f"page {e.page}, image {e.num}",
                )
            )
    return CheckResult.of(
        name, findings, f"{len(rows)} embedded image(s), assuming {ASSUMED_SOURCE_DPI:g} dpi sources"
    )
