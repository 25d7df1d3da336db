"""Real raster noise from the built-in suite, and changes a person would see, on real checkpoints.

``metrics/data/raster_noise.json`` (made by ``metrics/data/make_raster_noise.py``) holds, for tasks
103, 107, 115 and 109, the noisiest pair of an oracle replay rendered with partial raster on: the
replay's pixels that differ from the checkpoint. :func:`noisy_replay` rebuilds that screenshot.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from iwr_bench.dataset.media import load_font
from iwr_bench.suites.build import SAMPLE

DATA = Path(__file__).parent / "metrics" / "data" / "raster_noise.json"


@dataclass(frozen=True)
class NoiseCase:
    """One recorded checkpoint and the pixels a noisy replay of it had otherwise."""

    task: int
    checkpoint: Path
    checkpoint_sha256: str
    max_level: int
    replay_pixels: list[tuple[int, int, int, int, int]]
    """(x, y, r, g, b) of each pixel of the replay that differs from the checkpoint."""


def noise_cases() -> list[NoiseCase]:
    """The stored cases, in file order (tasks 103, 107, 115, 109)."""
    return [
        NoiseCase(
            task=c["task"],
            checkpoint=SAMPLE.parent / c["checkpoint"],
            checkpoint_sha256=c["checkpoint_sha256"],
            max_level=c["max_level"],
            replay_pixels=[tuple(p) for p in c["replay_pixels"]],
        )
        for c in json.loads(DATA.read_text())
    ]


def checkpoint(case: NoiseCase) -> Image.Image:
    """The case's checkpoint, as recorded when the noise was measured.

    Raises:
        AssertionError: the suite's checkpoint changed since (re-run ``make_raster_noise.py``).
    """
    data = case.checkpoint.read_bytes()
    assert hashlib.sha256(data).hexdigest() == case.checkpoint_sha256, (
        f"{case.checkpoint} was re-recorded: regenerate {DATA.name} with metrics/data/make_raster_noise.py"
    )
    with Image.open(case.checkpoint) as img:
        return img.convert("RGB")


def noisy_replay(case: NoiseCase, base: Image.Image | None = None) -> Image.Image:
    """The replay screenshot: ``base`` (default the checkpoint) with the replay's differing pixels."""
    img = (base if base is not None else checkpoint(case)).copy()
    for x, y, r, g, b in case.replay_pixels:
        img.putpixel((x, y), (r, g, b))
    return img


CARD = (700, 560, 1100, 700)
"""A white card drawn on both images of a counter-example (the 1280x720 checkpoint of task 103)."""


def _on_card(page: Image.Image, draw_it: Callable[[ImageDraw.ImageDraw], None]) -> Image.Image:
    img = page.copy()
    draw = ImageDraw.Draw(img)
    draw.rectangle(CARD, fill="white")
    draw_it(draw)
    return img


def visible_changes(page: Image.Image) -> dict[str, tuple[Image.Image, Image.Image]]:
    """Pairs (before, after) that differ the way pages really change, drawn on a white card."""
    font = load_font(14)
    x, y = CARD[0] + 20, CARD[1] + 20

    def text(value: str, colour: tuple[int, int, int]) -> Image.Image:
        return _on_card(page, lambda d: d.text((x, y), value, fill=colour, font=font))

    def border(dx: int, colour: tuple[int, int, int]) -> Image.Image:
        return _on_card(page, lambda d: d.rectangle((x + dx, y + 40, x + dx + 160, y + 80), outline=colour))

    def button(colour: tuple[int, int, int]) -> Image.Image:
        return _on_card(page, lambda d: d.rounded_rectangle((x + 200, y, x + 320, y + 40), 8, fill=colour))

    dark, grey = (17, 24, 39), (156, 163, 175)
    gray200, gray100 = (229, 231, 235), (243, 244, 246)  # 26 and 12 levels off white
    blue = (37, 99, 235)
    return {
        "one character of dark text": (text("Total: $23.50", dark), text("Total: $23.58", dark)),
        "one character of light grey text": (text("Total: $23.50", grey), text("Total: $23.58", grey)),
        "a light grey 1px border moved by 1px": (border(0, gray200), border(1, gray200)),
        "a very light 1px border moved by 1px": (border(0, gray100), border(1, gray100)),
        "a button's colour": (button(blue), button((29, 78, 216))),
        "a button's shade, 6 levels on one channel": (button(blue), button((37, 99, 241))),
    }
