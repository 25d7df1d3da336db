"""Drawn test images shared by the metric tests."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw

from iwr_bench.dataset.media import load_font


def page(title: str, colour: str, shape: str = "rect", size: tuple[int, int] = (480, 270)) -> Image.Image:
    """A small page-like image with a heading and a coloured shape."""
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, size[0], 40), fill=(30, 40, 90))
    draw.text((12, 8), title, fill="white", font=load_font(22))
    box = (40, 70, 260, 240)
    (draw.rectangle if shape == "rect" else draw.ellipse)(box, fill=colour)
    return img


@pytest.fixture(scope="session")
def images() -> dict[str, Image.Image]:
    return {
        "a": page("Cart total $23.50", "navy"),
        "a2": page("Cart total $23.50", "navy"),
        "b": page("Weather in Oslo", "orange", "ellipse"),
        "blank": Image.new("RGB", (480, 270), "white"),
    }
