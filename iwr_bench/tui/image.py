"""Screenshots drawn in any terminal with half-block characters.

Each character cell shows two pixels stacked: the upper half block "▀" in the top pixel's colour
over a background of the bottom pixel's colour. Works in every true-colour terminal (Textual
downsamples colours elsewhere); no graphics protocol is needed. :func:`diff_halfblock` draws where
a replay screenshot differs from its reference checkpoint (:mod:`iwr_bench.metrics.diff`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from PIL import Image
from rich.color import Color
from rich.style import Style
from rich.text import Text

from iwr_bench.metrics.diff import diff_overlay


def _cells(img: Image.Image, width: int, height: int) -> Text:
    img = img.convert("RGB")
    img.thumbnail((max(1, width), max(2, height * 2)), Image.Resampling.BILINEAR)
    w, h = img.size
    canvas = Image.new("RGB", (w, h + (h % 2)), (0, 0, 0))
    canvas.paste(img, (0, 0))
    px = canvas.load()
    assert px is not None
    text = Text(no_wrap=True, overflow="crop")
    for y in range(0, canvas.height, 2):
        for x in range(w):
            top, bottom = px[x, y], px[x, y + 1]
            assert isinstance(top, tuple) and isinstance(bottom, tuple)
            style = Style(color=Color.from_rgb(*top[:3]), bgcolor=Color.from_rgb(*bottom[:3]))
            text.append("▀", style)
        if y + 2 < canvas.height:
            text.append("\n")
    return text


@lru_cache(maxsize=64)
def _render(path: str, mtime: float, width: int, height: int) -> Text:
    del mtime  # part of the cache key only
    with Image.open(path) as im:
        return _cells(im, width, height)


def halfblock(path: Path, width: int, height: int) -> Text:
    """``path`` fitted into ``width`` x ``height`` cells (aspect kept); a note if it cannot be read."""
    try:
        return _render(str(path), path.stat().st_mtime, width, height)
    except (OSError, ValueError) as exc:
        return Text(f"(cannot show {path.name}: {exc})", style="dim")


@lru_cache(maxsize=16)
def _render_diff(reference: str, replay: str, mtimes: tuple[float, float], width: int, height: int) -> Text:
    del mtimes  # part of the cache key only
    diff = diff_overlay(Path(reference), Path(replay))
    regions = len(diff.regions)
    caption = f"{100 * diff.changed:.1f}% of pixels differ, {regions} region{'s' if regions != 1 else ''}"
    text = _cells(diff.image, width, max(1, height - 1))
    text.append("\n" + caption, style="bold" if diff.changed else "dim")
    return text


def diff_halfblock(reference: Path, replay: Path, width: int, height: int) -> Text:
    """Where ``replay`` differs from ``reference`` (highlighted over the faded reference), with a
    caption line; a note if an image cannot be read."""
    try:
        mtimes = (reference.stat().st_mtime, replay.stat().st_mtime)
        return _render_diff(str(reference), str(replay), mtimes, width, height)
    except (OSError, ValueError) as exc:
        return Text(f"(cannot compare: {exc})", style="dim")
