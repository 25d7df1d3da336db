"""Where a replay screenshot differs from its reference checkpoint, as a picture.

:func:`diff_overlay` scales the replay to the reference's size, marks every pixel whose colour
differs by more than ``tolerance`` (on any channel), and draws the result over a faded copy of
the reference: differing pixels in magenta, and a box around each differing region (cells of a
coarse grid joined when they touch). The terminal UI draws it in half blocks; the HTML report
saves it next to the two screenshots.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageChops, ImageDraw, ImageOps

HIGHLIGHT = (255, 0, 200)
"""Colour of differing pixels and of the boxes around differing regions."""


@dataclass
class Diff:
    """A reference, a replay and where they differ."""

    image: Image.Image
    """The faded reference with the differences drawn over it."""
    changed: float
    """Share of pixels that differ (0-1)."""
    regions: list[tuple[int, int, int, int]]
    """Boxes (left, top, right, bottom) around the differing regions, in reference pixels."""


def diff_overlay(reference: Path, replay: Path, *, tolerance: int = 24, cell: int = 16) -> Diff:
    """The difference of ``replay`` from ``reference`` (see the module doc).

    Raises:
        OSError: an image cannot be read.
    """
    with Image.open(reference) as a, Image.open(replay) as b:
        ref = a.convert("RGB")
        rep = b.convert("RGB").resize(ref.size, Image.Resampling.BILINEAR)
    table = [255 if v > tolerance else 0 for v in range(256)]
    delta = ImageChops.difference(ref, rep).convert("L").point(table)
    mask = delta.convert("1")
    histogram = delta.histogram()
    changed = histogram[255] / max(1, ref.width * ref.height)
    faded = Image.blend(ImageOps.grayscale(ref).convert("RGB"), Image.new("RGB", ref.size, (0, 0, 0)), 0.45)
    faded.paste(Image.new("RGB", ref.size, HIGHLIGHT), mask=mask)
    regions = _regions(delta, cell)
    draw = ImageDraw.Draw(faded)
    width = max(1, ref.width // 300)
    for box in regions:
        draw.rectangle(box, outline=HIGHLIGHT, width=width)
    return Diff(faded, changed, regions)


def _regions(delta: Image.Image, cell: int) -> list[tuple[int, int, int, int]]:
    """Boxes around connected groups of grid cells that hold a differing pixel."""
    cols, rows = -(-delta.width // cell), -(-delta.height // cell)
    padded = Image.new("L", (cols * cell, rows * cell), 0)
    padded.paste(delta, (0, 0))
    small = padded.resize((cols, rows), Image.Resampling.BOX)  # mean of each cell
    hot = {(x, y) for y in range(rows) for x in range(cols) if _value(small, x, y) > 0}
    boxes: list[tuple[int, int, int, int]] = []
    while hot:
        stack = [hot.pop()]
        xs, ys = [stack[0][0]], [stack[0][1]]
        while stack:
            x, y = stack.pop()
            for n in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                if n in hot:
                    hot.remove(n)
                    stack.append(n)
                    xs.append(n[0])
                    ys.append(n[1])
        right = min(delta.width, (max(xs) + 1) * cell) - 1
        bottom = min(delta.height, (max(ys) + 1) * cell) - 1
        boxes.append((min(xs) * cell, min(ys) * cell, right, bottom))
    return sorted(boxes, key=lambda b: (b[1], b[0]))


def _value(image: Image.Image, x: int, y: int) -> float:
    value = image.getpixel((x, y))
    return float(value) if isinstance(value, int | float) else 0.0
