"""Videos whose every frame says its own number in its colour, so a test can tell which frames were sent."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, ImageStat

from iwr_bench.dataset.media import write_video

_STEP = 16  # 16 levels per channel, far apart enough to survive H.264 and JPEG


def colour(index: int) -> tuple[int, int, int]:
    """The colour of frame ``index`` (up to 4095 frames)."""
    r, g, b = index % 16, (index // 16) % 16, index // 256
    return (r * _STEP + 8, g * _STEP + 8, b * _STEP + 8)


def frame_number(image: Image.Image) -> int:
    """The frame number a decoded frame shows (its mean colour, rounded to the nearest level)."""
    r, g, b = (min(15, max(0, round((c - 8) / _STEP))) for c in ImageStat.Stat(image.convert("RGB")).mean)
    return r + 16 * g + 256 * b


def frame_number_of(data: bytes) -> int:
    """:func:`frame_number` of encoded image bytes."""
    with Image.open(io.BytesIO(data)) as img:
        return frame_number(img)


def coded_video(path: Path, frames: int, fps: int, size: tuple[int, int] = (64, 48)) -> Path:
    """Write ``frames`` solid frames at ``fps``, frame i in :func:`colour` (i)."""
    write_video((Image.new("RGB", size, colour(i)) for i in range(frames)), path, fps=fps, crf=12)
    return path
