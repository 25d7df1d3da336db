"""Writing task media: H.264 videos from frames, and asset contact sheets."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path

import av
from PIL import Image, ImageDraw, ImageFont

from iwr_bench.dataset.layout import SHEET_PREFIX, SHEETS_MANIFEST


def write_video(frames: Iterable[Image.Image], path: Path, fps: int = 10, crf: int = 28) -> int:
    """Encode frames (all the same size, even dimensions) as an H.264 MP4; returns the frame count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with av.open(str(path), mode="w") as container:
        stream: av.VideoStream | None = None
        for image in frames:
            if stream is None:
                stream = container.add_stream("libx264", rate=Fraction(fps))
                stream.width, stream.height = image.width - image.width % 2, image.height - image.height % 2
                stream.pix_fmt = "yuv420p"
                stream.options = {"crf": str(crf), "preset": "veryfast"}
            rgb = image.convert("RGB").crop((0, 0, stream.width, stream.height))
            for packet in stream.encode(av.VideoFrame.from_image(rgb)):
                container.mux(packet)
            count += 1
        if stream is not None:
            for packet in stream.encode():
                container.mux(packet)
    return count


def load_font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """DejaVu Sans at ``size`` px, or Pillow's built-in font when it is not installed."""
    for name in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default()


def write_contact_sheets(
    assets: Sequence[Path], out_dir: Path, *, thumb: int = 180, columns: int = 5, per_sheet: int = 20
) -> list[Path]:
    """Draw contact sheets of image assets, each filename printed under its thumbnail.

    Sheets are named ``stitched_image_01.png``, ``stitched_image_02.png``, ... so that the official
    generator, which sends the files whose names start with ``stitched_image`` in plain sorted
    order, sends them in this order. Also writes ``sheets.json`` (sheet file -> asset names) so the
    validator can check that every asset is shown. Non-image assets (e.g. videos) get a labelled
    placeholder tile.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    font = load_font(14)
    label_h = 22
    sheets: list[Path] = []
    listing: dict[str, list[str]] = {}
    for n, start in enumerate(range(0, len(assets), per_sheet), start=1):
        chunk = assets[start : start + per_sheet]
        rows = math.ceil(len(chunk) / columns)
        cols = min(columns, len(chunk))
        sheet = Image.new("RGB", (cols * (thumb + 10) + 10, rows * (thumb + label_h + 10) + 10), "white")
        draw = ImageDraw.Draw(sheet)
        for i, asset in enumerate(chunk):
            x = 10 + (i % columns) * (thumb + 10)
            y = 10 + (i // columns) * (thumb + label_h + 10)
            tile = _thumbnail(asset, thumb)
            sheet.paste(tile, (x + (thumb - tile.width) // 2, y + (thumb - tile.height) // 2))
            draw.rectangle((x, y, x + thumb - 1, y + thumb - 1), outline=(200, 200, 200))
            draw.text((x + thumb // 2, y + thumb + 4), asset.name, fill="black", font=font, anchor="mt")
        path = out_dir / f"{SHEET_PREFIX}_{n:02d}.png"
        sheet.save(path, optimize=True)
        sheets.append(path)
        listing[path.name] = [a.name for a in chunk]
    (out_dir / SHEETS_MANIFEST).write_text(json.dumps(listing, indent=2) + "\n", encoding="utf-8")
    return sheets


def _thumbnail(asset: Path, size: int) -> Image.Image:
    try:
        with Image.open(asset) as img:
            tile = img.convert("RGBA")
    except OSError:
        tile = Image.new("RGBA", (size, size), (235, 235, 235, 255))
        ImageDraw.Draw(tile).text((size // 2, size // 2), asset.suffix or "file", fill="gray", anchor="mm")
        return tile
    tile.thumbnail((size, size))
    flat = Image.new("RGBA", tile.size, (255, 255, 255, 255))
    flat.alpha_composite(tile)
    return flat.convert("RGB")
