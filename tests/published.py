"""A task set written from the published dataset's schema, not from our own writer.

The published ``data.jsonl`` declares every action parameter as a string and leaves the unused ones
empty (``"key": ""``), carries ``element_index``, has environments beyond desktop/mobile, empty
descriptions on scrolls, and names its contact sheets ``stitched_image_<n>.png`` without padding
(so plain sorting puts ``_10`` before ``_2``). Task 301 has a long video (past the 64-frame cap at
1 FPS), task 302 a short one and no resolution in its record (its ``metadata.json`` gives it), task
303 is a ``tablet`` recording. Every video frame shows its own index, so tests can tell which
frames a generator sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from iwr_bench.dataset.media import load_font, write_video

SIZE = (320, 180)
LONG_S, SHORT_S, FPS = 70, 5.5, 2
SHEETS = 12


def _params(description: str, **given: str) -> dict[str, str]:
    params = {"description": description, "key": "", "direction": "", "scroll_page": "", "element_index": ""}
    params.update(given)
    return params


def _actions() -> list[dict[str, Any]]:
    return [
        {
            "type": "Click",
            "parameters": _params("the blue 'Start' button in the middle"),
            "visual_evaluation_flag": True,
            "logical_assertion": "a message 'Started' appears",
        },
        {
            "type": "Scroll",
            "parameters": _params("", direction="down"),
            "visual_evaluation_flag": False,
            "logical_assertion": "",
        },
        {
            "type": "Type",
            "parameters": _params("the search box at the top", text="lamps"),
            "visual_evaluation_flag": True,
            "logical_assertion": "",
        },
        {
            "type": "Press",
            "parameters": _params("press Enter to search", key="Enter"),
            "visual_evaluation_flag": False,
            "logical_assertion": "the results for 'lamps' are listed",
        },
    ]


def _frame(n: int) -> Image.Image:
    img = Image.new("RGB", SIZE, ((n * 37) % 256, (n * 91) % 256, (n * 53) % 256))
    ImageDraw.Draw(img).text(
        (SIZE[0] // 2, SIZE[1] // 2), str(n), fill="white", font=load_font(60), anchor="mm"
    )
    return img


def _task_folder(folder: Path, seconds: float) -> None:
    (folder / "assets").mkdir(parents=True)
    for i in range(1, 15):
        Image.new("RGB", (40, 30), (i * 15, 80, 160)).save(folder / "assets" / f"asset{i:03d}.png")
    sheets = folder / "stitched_assets"
    sheets.mkdir()
    for n in range(1, SHEETS + 1):
        sheet = Image.new("RGB", (200, 120), "white")
        ImageDraw.Draw(sheet).text((100, 60), f"sheet {n}", fill="black", font=load_font(20), anchor="mm")
        sheet.save(sheets / f"stitched_image_{n}.png")
    Image.new("RGB", (50, 50), "red").save(sheets / "preview.png")  # not a sheet by the official rule
    frames = round(seconds * FPS)
    write_video((_frame(n) for n in range(frames)), folder / "video.mp4", fps=FPS)
    checkpoints = folder / "checkpoints"
    checkpoints.mkdir()
    for k in range(3):  # step_0 plus the two flagged actions
        Image.new("RGB", SIZE, (250, 250 - 40 * k, 250)).save(checkpoints / f"step_{k}.png")


def _record(task_id: int, environment: str, resolution: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {"environment": environment}
    if resolution is not None:
        details["resolution"] = resolution
    return {
        "id": task_id,
        "source_website": "https://example.invalid/",
        "classification": {
            "interaction_complexity": "L2: Simple State Change",
            "visual_complexity": "V2: Moderate",
            "domain": "E-commerce",
            "sub_domain": "Search",
        },
        "recording_details": details,
        "action_sequence": _actions(),
    }


def build_published_set(root: Path) -> Path:
    """Write ``<root>/data.jsonl`` and ``<root>/data/<id>/``; returns the jsonl path."""
    size = f"{SIZE[0]}x{SIZE[1]}"
    tasks = [(301, "desktop", size, LONG_S), (302, "mobile", None, SHORT_S), (303, "tablet", size, SHORT_S)]
    records = []
    for task_id, environment, resolution, seconds in tasks:
        folder = root / "data" / str(task_id)
        _task_folder(folder, seconds)
        if resolution is None:
            meta = {"recording_details": {"resolution": size}}
            (folder / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
        records.append(_record(task_id, environment, resolution))
    jsonl = root / "data.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return jsonl
