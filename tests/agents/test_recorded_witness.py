"""Claims text cannot settle: settled by the recording's own screen (only an identical one), or by a
shape seen moving on the screenshots (only the way the claim says)."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw

from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.pixels import moved_on_screen
from iwr_bench.agents.judge.records import AssertionRequest
from iwr_bench.tools.models import BoundingBox, TextRun, VisibleText

pytestmark = pytest.mark.anyio


def _png(star_at: int | None, noise: int = 0) -> bytes:
    image = Image.new("RGB", (320, 180), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 10, 90, 110), fill="#1e3a8a")  # a card
    if star_at is not None:
        draw.regular_polygon((star_at, 60, 25), 5, fill="#facc15")  # the picture on it
    if noise:
        image.putpixel((300, 170), (255 - noise, 255, 255))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _request(after: bytes, recorded: bytes | None) -> AssertionRequest:
    run = TextRun(text="Moves: 1", box=BoundingBox(x=200, y=10, width=80, height=20))
    seen = VisibleText(runs=[run], text="Moves: 1", height=180)
    return AssertionRequest(
        assertion="the top-left card turns face up and shows a yellow star",
        before_png=_png(None),
        after_png=after,
        before_visible=seen,
        after_visible=seen,
        recorded_png=recorded,
    )


async def test_an_identical_recorded_screen_confirms_what_text_cannot() -> None:
    judge = HeuristicAssertionJudge()
    alone = await judge(_request(_png(50), None))
    assert alone.verdict == "undetermined"
    same = await judge(_request(_png(50, noise=3), _png(50)))  # raster noise is no difference
    assert same.verdict == "yes" and "recording's screen" in same.reasoning
    moved = await judge(_request(_png(60), _png(50)))  # the star elsewhere: not the recorded screen
    assert moved.verdict == "undetermined"
    unchanged = await judge(_request(_png(None), _png(50)))  # nothing happened: a no stays a no
    assert unchanged.verdict == "no"


def _board(ring_at: int | None) -> Image.Image:
    """A dark board of four cards, one of them ringed in yellow."""
    image = Image.new("RGB", (640, 240), "#f0fdfa")
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 20, 620, 220), fill="#105050")
    for i in range(4):
        x = 40 + i * 150
        if i == ring_at:
            draw.rectangle((x - 8, 42, x + 118, 198), outline="#fbbf24", width=5)
        draw.rectangle((x, 50, x + 110, 190), fill="#1e3a8a")
    return image


def test_a_shape_that_moves_is_followed_on_the_screenshots() -> None:
    right = moved_on_screen("the yellow ring moves one card to the right", _board(0), _board(1))
    assert right is not None and "rgb(2" in right
    assert moved_on_screen("the ring moves to the right", _board(0), _board(1)) is not None
    assert moved_on_screen("the ring moves to the left", _board(0), _board(1)) is None  # wrong way
    assert moved_on_screen("the blue ring moves to the right", _board(0), _board(1)) is None  # not blue
    assert moved_on_screen("the ring moves down", _board(0), _board(1)) is None  # sideways, not down
    assert moved_on_screen("the ring moves to the right", _board(0), _board(None)) is None  # just gone
    assert moved_on_screen("the ring moves to the right", _board(1), _board(1)) is None  # nothing moved
