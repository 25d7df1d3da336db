"""A tiny synthetic task set in the exact official layout, drawn with Pillow.

Used by the tests (a fixture that round-trips through load -> validate -> list) and by the
demo before a recorded suite exists. Each task is a counter widget: clicking "+" raises the
number shown; the video and checkpoints are drawn, not recorded from a browser.
"""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw

from iwr_bench.dataset.layout import ASSETS_DIR, CHECKPOINTS_DIR, SHEETS_DIR, VIDEO_NAME
from iwr_bench.dataset.media import load_font, write_contact_sheets, write_video


def _draw_state(width: int, height: int, count: int, logo: Image.Image) -> Image.Image:
    img = Image.new("RGB", (width, height), (246, 247, 251))
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, width, height // 8), fill=(40, 60, 120))
    img.paste(logo, (12, max(0, (height // 8 - logo.height) // 2)))
    draw.text(
        (width // 2, height // 16),
        "Counter demo",
        fill="white",
        font=load_font(max(12, height // 24)),
        anchor="mm",
    )
    draw.text(
        (width // 2, height // 2), str(count), fill=(20, 20, 20), font=load_font(height // 5), anchor="mm"
    )
    bx, by, bw, bh = width // 2 - width // 10, int(height * 0.72), width // 5, height // 10
    draw.rounded_rectangle((bx, by, bx + bw, by + bh), radius=8, fill=(30, 130, 80))
    draw.text((bx + bw // 2, by + bh // 2), "+", fill="white", font=load_font(bh // 2), anchor="mm")
    return img


def _assets(folder: Path) -> Image.Image:
    folder.mkdir(parents=True, exist_ok=True)
    logo = Image.new("RGB", (48, 48), (250, 200, 40))
    ImageDraw.Draw(logo).ellipse((6, 6, 42, 42), fill=(220, 80, 40))
    logo.save(folder / "001.png")
    banner = Image.new("RGB", (160, 60), (90, 160, 220))
    ImageDraw.Draw(banner).text((80, 30), "SALE", fill="white", font=load_font(24), anchor="mm")
    banner.save(folder / "002.png")
    return logo


def build_task(
    folder: Path, task_id: int, *, clicks: int = 3, resolution: tuple[int, int] = (640, 360)
) -> dict[str, object]:
    """Write one task folder and return its ``data.jsonl`` record.

    Every click is visually flagged; the last one carries a logical assertion.
    """
    width, height = resolution
    logo = _assets(folder / ASSETS_DIR)
    write_contact_sheets(sorted((folder / ASSETS_DIR).iterdir()), folder / SHEETS_DIR)
    states = [_draw_state(width, height, n, logo) for n in range(clicks + 1)]
    checkpoints = folder / CHECKPOINTS_DIR
    checkpoints.mkdir(parents=True, exist_ok=True)
    for k, state in enumerate(states):
        state.save(checkpoints / f"step_{k}.png")
    fps = 10
    write_video((state for state in states for _ in range(int(fps * 1.5))), folder / VIDEO_NAME, fps=fps)
    actions: list[dict[str, object]] = [
        {
            "type": "Click",
            "parameters": {"description": "the green '+' button below the number"},
            "visual_evaluation_flag": True,
            "logical_assertion": f"the number shown changes to {clicks}" if n == clicks else "",
        }
        for n in range(1, clicks + 1)
    ]
    return {
        "id": task_id,
        "source_website": "synthetic://counter",
        "classification": {
            "interaction_complexity": "L2",
            "visual_complexity": "V1",
            "domain": "Demo",
            "sub_domain": "Counter",
        },
        "recording_details": {"resolution": f"{width}x{height}", "environment": "desktop"},
        "action_sequence": actions,
    }


def build_task_set(root: Path, ids: tuple[int, ...] = (1, 2), *, stem: str = "data") -> Path:
    """Write ``<root>/<stem>.jsonl`` plus one task folder per id; returns the jsonl path."""
    root.mkdir(parents=True, exist_ok=True)
    records = [build_task(root / stem / str(i), i, clicks=2 + n) for n, i in enumerate(ids)]
    jsonl = root / f"{stem}.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return jsonl
