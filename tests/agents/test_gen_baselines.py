"""Offline baselines on the synthetic task set."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import pytest
from PIL import Image

from iwr_bench.agents.generation import PLACEHOLDER, Generator, write_result
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.registry import create, names


def test_baselines_are_registered() -> None:
    assert {"oracle", "screenshot", "blank", "lvlm"} <= set(names("generator"))
    for name in ("oracle", "screenshot", "blank"):
        gen, spec = create("generator", name)
        assert isinstance(gen, Generator) and gen.name == name and spec.name == name


@pytest.mark.anyio
async def test_oracle_returns_the_reference_page(tasks_root: Path, tmp_path: Path) -> None:
    ref = tasks_root / "data" / "1" / "reference"
    ref.mkdir()
    (ref / "index.html").write_text(f"<html><img src='{PLACEHOLDER}/001.png'></html>", encoding="utf-8")
    tasks = load_tasks(tasks_root)
    oracle, _ = create("generator", "oracle")
    with_ref = await oracle(tasks.by_id(1))
    assert with_ref.status == "ok" and with_ref.html == f"<html><img src='{PLACEHOLDER}/001.png'></html>"
    # Written into a results tree, the page refers to the task's assets relative to its folder.
    folder = write_result(tmp_path / "results", with_ref)
    assert (folder / "index.html").read_text() == "<html><img src='../../../ds/data/1/assets/001.png'></html>"
    assert (folder / "../../../ds/data/1/assets/001.png").is_file()
    # An explicit asset base replaces the placeholder at once.
    fixed, _ = create("generator", "oracle", asset_base="assets")
    assert (await fixed(tasks.by_id(1))).html == "<html><img src='assets/001.png'></html>"
    without = await oracle(tasks.by_id(2))
    assert without.status == "failed" and without.error is not None
    assert without.error.kind == "no_reference" and without.html == ""


@pytest.mark.anyio
async def test_screenshot_shows_the_first_frame_at_the_task_resolution(tasks_root: Path) -> None:
    task = load_tasks(tasks_root).by_id(1)
    gen, _ = create("generator", "screenshot")
    result = await gen(task)
    assert result.status == "ok"
    html = result.html
    assert "margin:0" in html and "overflow:hidden" in html
    assert 'width="640" height="360"' in html
    m = re.search(r'src="data:image/png;base64,([^"]+)"', html)
    assert m is not None
    with Image.open(io.BytesIO(base64.b64decode(m.group(1)))) as img:
        assert img.size == (640, 360)
        shown = img.convert("RGB")
    with Image.open(task.checkpoints[0]) as step0:
        ref = step0.convert("RGB")
    # The first frame is the initial state: close to step_0 (video compression aside).
    small, ref_small = shown.resize((32, 18)).tobytes(), ref.resize((32, 18)).tobytes()
    diff = sum(abs(a - b) for a, b in zip(small, ref_small, strict=True))
    assert diff / (32 * 18 * 3) < 12
    assert result.sampling is not None and result.sampling.cap == 1


@pytest.mark.anyio
async def test_screenshot_of_a_missing_video_is_a_recorded_failure(tasks_root: Path) -> None:
    (tasks_root / "data" / "2" / "video.mp4").unlink()
    gen, _ = create("generator", "screenshot")
    result = await gen(load_tasks(tasks_root).by_id(2))
    assert result.status == "failed" and result.error is not None and result.error.kind == "video_error"


@pytest.mark.anyio
async def test_blank_is_an_empty_page(tasks_root: Path) -> None:
    gen, _ = create("generator", "blank")
    result = await gen(load_tasks(tasks_root).by_id(1))
    assert result.status == "empty" and result.html == "" and result.error is None
