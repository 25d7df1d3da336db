"""The replay-versus-reference diff: which pixels and regions differ."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

from iwr_bench.metrics.diff import HIGHLIGHT, diff_overlay


def _page(path: Path, boxes: list[tuple[int, int, int, int]], size: tuple[int, int] = (320, 200)) -> Path:
    img = Image.new("RGB", size, (250, 250, 250))
    draw = ImageDraw.Draw(img)
    for box in boxes:
        draw.rectangle(box, fill=(20, 60, 200))
    img.save(path)
    return path


def test_two_changed_areas_are_two_boxed_regions(tmp_path: Path) -> None:
    reference = _page(tmp_path / "ref.png", [(10, 10, 60, 40)])
    replay = _page(tmp_path / "rep.png", [(10, 10, 60, 40), (200, 120, 239, 159)])  # one button more
    diff = diff_overlay(reference, replay)
    assert diff.changed == (40 * 40) / (320 * 200)
    assert diff.regions == [(192, 112, 239, 159)]  # the new button, on the 16-pixel grid
    assert diff.image.getpixel((220, 140)) == HIGHLIGHT
    assert diff.image.getpixel((30, 20)) != HIGHLIGHT  # the unchanged button is only faded

    moved = _page(tmp_path / "moved.png", [(250, 10, 300, 40)], size=(640, 400))  # other size: scaled
    diff = diff_overlay(reference, moved)
    assert len(diff.regions) == 2 and diff.image.size == (320, 200)


def test_identical_screens_have_no_difference(tmp_path: Path) -> None:
    page = _page(tmp_path / "a.png", [(10, 10, 60, 40)])
    diff = diff_overlay(page, page)
    assert diff.changed == 0.0 and diff.regions == []
