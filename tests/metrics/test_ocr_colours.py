"""EasyOCR reads our images as the official ``readtext(path)`` reads their PNG files, in any colours."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from iwr_bench.dataset.media import load_font
from iwr_bench.metrics.ocr import EasyOcr
from iwr_bench.metrics.text import join_segments, text_similarity

TEXT = "Checkout now - total 42 USD"
COLOURS = {
    # Red on a navy whose blue level equals the red's red: the same grey when red and blue swap.
    "red on navy": ((255, 0, 0), (0, 0, 97)),
    "orange on blue": ((255, 120, 0), (40, 40, 230)),
    "white on blue": ((255, 255, 255), (30, 80, 200)),
    "yellow on black": ((250, 220, 0), (0, 0, 0)),
    "grey on white": ((140, 140, 140), (255, 255, 255)),
}


def _label(fg: tuple[int, int, int], bg: tuple[int, int, int]) -> Image.Image:
    img = Image.new("RGB", (520, 80), bg)
    ImageDraw.Draw(img).text((14, 24), TEXT, fill=fg, font=load_font(24))
    return img


@pytest.fixture(scope="module")
def ocr() -> EasyOcr:
    return EasyOcr(device="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COLOURS))
def test_text_read_equals_reading_the_png_file(ocr: EasyOcr, name: str, tmp_path: Path) -> None:
    image = _label(*COLOURS[name])
    path = tmp_path / "label.png"
    image.save(path)
    reader = ocr._load()  # pyright: ignore[reportPrivateUsage]
    from_file = join_segments(str(s) for s in reader.readtext(str(path), detail=0))  # type: ignore[attr-defined]
    assert ocr.read(image) == from_file
    black = _label((0, 0, 0), (255, 255, 255))
    assert text_similarity(ocr.read(image), ocr.read(black)) == 1.0


@pytest.mark.slow
def test_an_rgb_array_handed_to_easyocr_loses_red_on_navy(ocr: EasyOcr) -> None:
    """The bug the file-equivalent input avoids: EasyOCR takes an array for BGR."""
    image = _label(*COLOURS["red on navy"])
    reader = ocr._load()  # pyright: ignore[reportPrivateUsage]
    as_array = join_segments(str(s) for s in reader.readtext(np.asarray(image), detail=0))  # type: ignore[attr-defined]
    assert text_similarity(as_array, TEXT.lower()) < 0.5
    assert text_similarity(ocr.read(image), TEXT.lower()) > 0.9
