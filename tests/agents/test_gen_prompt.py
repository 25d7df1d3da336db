"""The request layout, checked with FunctionModel: instructions, then sheets, then frames."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image
from pydantic_ai import BinaryContent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from iwr_bench.agents.generation import ModelConfig, RetryPolicy, build_generator, write_result
from iwr_bench.agents.generation.postprocess import PLACEHOLDER
from iwr_bench.dataset.frames import plan_images
from iwr_bench.dataset.layout import load_tasks

ANSWER = f"```html\n<html><body><img src='{PLACEHOLDER}/001.png' width=4 height=4></body></html>\n```"


class Recorder:
    """A FunctionModel body that keeps the user message it was sent."""

    def __init__(self, answer: str = ANSWER, finish_reason: str = "stop") -> None:
        self.parts: list[object] = []
        self.settings: dict[str, object] = {}
        self.answer = answer
        self.finish_reason = finish_reason
        self.calls = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        request = messages[0]
        assert isinstance(request, ModelRequest)
        prompt = next(p for p in request.parts if isinstance(p, UserPromptPart))
        assert not isinstance(prompt.content, str)
        self.parts = list(prompt.content)
        self.settings = dict(info.model_settings or {})
        return ModelResponse(parts=[TextPart(self.answer)], finish_reason=self.finish_reason)  # type: ignore[arg-type]


def _images(parts: list[object]) -> list[BinaryContent]:
    return [p for p in parts if isinstance(p, BinaryContent)]


async def _generate(tasks_root: Path, recorder: Recorder, **config: object):
    task = load_tasks(tasks_root).by_id(1)
    cfg = ModelConfig(name="fake:model", **config)  # type: ignore[arg-type]
    gen = build_generator(cfg, model=FunctionModel(recorder), retry=RetryPolicy(retries=0))
    return task, await gen(task)


@pytest.mark.anyio
async def test_instructions_then_sheets_then_frames(tasks_root: Path) -> None:
    rec = Recorder()
    task, result = await _generate(tasks_root, rec, max_tokens=1234, thinking="low")
    assert result.status == "ok", result.error
    assert isinstance(rec.parts[0], str)
    text = rec.parts[0]
    assert "640x360" in text and "btn" in text and PLACEHOLDER in text and "```html" in text
    assert all(not isinstance(p, str) for p in rec.parts[1:])
    kinds = [p.media_type for p in _images(rec.parts)]
    n_sheets = len(task.sheet_files)
    assert n_sheets >= 1
    assert kinds[:n_sheets] == ["image/png"] * n_sheets
    assert kinds[n_sheets:] and set(kinds[n_sheets:]) == {"image/jpeg"}
    # Sheets in filename order: each sent image has the size of the matching sheet file.
    for part, path in zip(_images(rec.parts)[:n_sheets], task.sheet_files, strict=True):
        with Image.open(path) as sheet, Image.open(io.BytesIO(part.data)) as sent:
            assert sent.size == sheet.size
    assert rec.settings["temperature"] == 0
    assert rec.settings["max_tokens"] == 1234
    assert result.settings["thinking"] == "low"  # FunctionModel drops settings it does not support
    assert result.images.sheets == n_sheets and result.images.frames == len(kinds) - n_sheets
    assert result.sampling is not None and len(result.sampling.timestamps) == result.images.frames
    # The placeholder waits for the page's folder: written, it points at the task's assets from there.
    assert result.asset_base is None and result.assets_dir == str(task.assets_dir)
    folder = write_result(tasks_root.parent / "results", result)
    assert result.asset_base == "../../../ds/data/1/assets"
    assert "src='../../../ds/data/1/assets/001.png'" in (folder / "index.html").read_text()
    assert result.raw == ANSWER


@pytest.mark.anyio
@pytest.mark.parametrize(("budget", "cap"), [(70, 64), (20, 20), (3, 64), (1, 64), (2, 0)])
async def test_image_count_follows_the_budget(tasks_root: Path, budget: int, cap: int) -> None:
    rec = Recorder()
    task, result = await _generate(tasks_root, rec, image_budget=budget, frame_cap=cap)
    plan = plan_images(len(task.sheet_files), budget, cap)
    images = _images(rec.parts)
    assert len(images) <= budget
    assert result.images.sheets == plan.sheets
    n_frames = len(images) - plan.sheets
    assert n_frames <= plan.frames and n_frames <= cap
    assert result.images.frames == n_frames
    if plan.frames == 0:
        assert n_frames == 0 and result.images.video == "none"
        assert "no frames" in str(rec.parts[0])
    else:
        assert n_frames == min(plan.frames, 5)  # the synthetic video is 4.5 s long: 5 frames at 1 fps


@pytest.mark.anyio
async def test_images_are_downscaled_to_the_max_side(tasks_root: Path) -> None:
    rec = Recorder()
    _task, result = await _generate(tasks_root, rec, max_image_side=100)
    sizes = []
    for part in _images(rec.parts):
        with Image.open(io.BytesIO(part.data)) as img:
            sizes.append(img.size)
    assert sizes and all(max(s) <= 100 for s in sizes)
    assert (100, 56) in sizes  # a 640x360 frame, aspect kept
    assert result.images.max_image_side == 100


@pytest.mark.anyio
async def test_native_video_falls_back_to_frames_where_the_model_cannot_take_video(tasks_root: Path) -> None:
    rec = Recorder()
    _task, result = await _generate(tasks_root, rec, native_video=True)
    assert result.images.video == "frames"
    assert all(p.media_type.startswith("image/") for p in _images(rec.parts))


@pytest.mark.anyio
async def test_empty_answer_is_an_empty_page_after_one_call(tasks_root: Path) -> None:
    rec = Recorder(answer="")
    _task, result = await _generate(tasks_root, rec)
    assert rec.calls == 1
    assert result.status == "empty" and result.html == "" and result.error is None


@pytest.mark.anyio
async def test_an_answer_that_leaves_no_page_is_a_failed_generation(tasks_root: Path) -> None:
    # text, but an empty block: nothing of it makes a page
    rec = Recorder(answer="Sorry, I could not rebuild it:\n```html\n```")
    _task, result = await _generate(tasks_root, rec)
    assert rec.calls == 1
    assert result.status == "failed" and result.html == ""
    assert result.error is not None and result.error.kind == "empty_page"
    assert result.raw.startswith("Sorry, I could not")  # the answer is kept to look at
    # HTML on the opening fence's own line is the page (it was an empty one before)
    rec = Recorder(answer="```html<html><body><p>Hello</p></body></html>\n```")
    _task, result = await _generate(tasks_root, rec)
    assert result.status == "ok" and result.html == "<html><body><p>Hello</p></body></html>\n"


@pytest.mark.anyio
async def test_truncated_answer_is_recorded_and_kept(tasks_root: Path) -> None:
    rec = Recorder(answer="```html\n<html><body><div>half", finish_reason="length")
    _task, result = await _generate(tasks_root, rec)
    assert result.status == "truncated" and result.finish_reason == "length"
    assert result.html == "<html><body><div>half\n"


@pytest.mark.anyio
async def test_missing_video_is_a_recorded_failure(tasks_root: Path) -> None:
    (tasks_root / "data" / "1" / "video.mp4").unlink()
    rec = Recorder()
    _task, result = await _generate(tasks_root, rec)
    assert rec.calls == 0
    assert result.status == "failed" and result.error is not None
    assert result.error.kind == "video_error"
