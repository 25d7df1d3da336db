"""``--protocol official`` generation through the real OpenAI provider and the fake server on 127.0.0.1.

Each test reads what really went over HTTP: settings, the number, order, bytes and media types of
the images, and which video frames they were.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from coded_video import coded_video, frame_number_of
from fake_openai import FakeOpenAI
from PIL import Image

from iwr_bench.agents.generation import (
    GenerationResult,
    ModelConfig,
    RetryPolicy,
    build_generator,
    read_record,
    write_result,
)
from iwr_bench.agents.generation.official import for_protocol, preset_for
from iwr_bench.agents.generation.prompt import load_prompt_file
from iwr_bench.agents.generation.wire import WireRequest, sent_line, summarize
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.protocol import EvalProtocol

OFFICIAL = EvalProtocol.official
FAST = RetryPolicy(retries=0)


def _images(body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """(media type, bytes) of every image part of the one user message, in order."""
    parts = body["messages"][-1]["content"]
    out: list[tuple[str, bytes]] = []
    for part in parts[1:]:
        assert part["type"] == "image_url"
        head, data = part["image_url"]["url"].split(",", 1)
        out.append((head.removeprefix("data:").removesuffix(";base64"), base64.b64decode(data)))
    return out


def _text(body: dict[str, Any]) -> str:
    first = body["messages"][-1]["content"][0]
    assert first["type"] == "text"
    return first["text"]


def _size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as img:
        return img.size


def _add_sheets(task: Task) -> list[Path]:
    """Twelve more sheets (one a JPEG) and a stray picture, as in the published data."""
    folder = task.sheets_dir
    for n in range(1, 13):
        img = Image.new("RGB", (120 + n, 80), (n * 20, 255 - n * 20, 90))
        img.save(folder / (f"stitched_image_{n}.jpg" if n == 5 else f"stitched_image_{n}.png"))
    Image.new("RGB", (50, 50), "red").save(folder / "collage_preview.png")
    return sorted(p for p in folder.iterdir() if p.name.startswith("stitched_image"))


async def _generate(config: ModelConfig, task: Task, **kw: Any) -> GenerationResult:
    async with build_generator(config, retry=FAST, protocol=kw.pop("protocol", OFFICIAL), **kw) as gen:
        return await gen(task)


@pytest.mark.anyio
async def test_qwen_preset_sheets_as_files_then_official_frames(fake: FakeOpenAI, tasks_root: Path) -> None:
    task = load_tasks(tasks_root).by_id(1)
    coded_video(task.video, frames=300, fps=10)  # 30 s
    sheets = _add_sheets(task)
    assert len(sheets) == 13 and [p.name for p in sheets][:3] == [
        "stitched_image_01.png",
        "stitched_image_1.png",
        "stitched_image_10.png",
    ]
    config = ModelConfig(name="local:Qwen/Qwen2.5-VL-7B-Instruct", base_url=fake.url)
    result = await _generate(config, task)
    assert result.status == "ok", result.error
    body = fake.requests[0]
    # The qwen preset: 4096 tokens, temperature 0, 20 images at most.
    assert body["temperature"] == 0 and body["max_tokens"] == 4096
    images = _images(body)
    assert len(images) == 20
    # Every sheet, in plain sorted order, byte for byte, with the media type of its extension.
    for (media, data), path in zip(images[:13], sheets, strict=True):
        assert data == path.read_bytes(), path.name
        assert media == ("image/jpeg" if path.suffix == ".jpg" else "image/png")
    # Then min(20, 20 - 13) = 7 frames of a 30 s video: int(i * 300 / 7).
    want = [int(i * 300 / 7) for i in range(7)]
    assert [m for m, _ in images[13:]] == ["image/jpeg"] * 7
    assert [frame_number_of(d) for _, d in images[13:]] == want
    reference = io.BytesIO()
    Image.new("RGB", (8, 8)).save(reference, format="JPEG", quality=95)
    with Image.open(reference) as ref, Image.open(io.BytesIO(images[13][1])) as frame:
        assert frame.quantization == ref.quantization  # pyright: ignore[reportAttributeAccessIssue]
    # The record says what was sent.
    assert result.protocol == OFFICIAL and result.preset == "qwen"
    assert result.images.sheet_names == [p.name for p in sheets]
    assert result.sampling is not None and result.sampling.indices == want
    assert result.sampling.timestamps == pytest.approx([i / 10 for i in want])
    assert result.sent is not None and result.sent.temperature == 0.0 and result.sent.max_tokens == 4096
    assert result.sent.max_tokens_field == "max_tokens" and result.sent.dropped == []
    assert result.sent.timeout_s == 300


@pytest.mark.anyio
async def test_short_video_gives_one_frame_a_second_without_the_fraction(
    fake: FakeOpenAI, tasks_root: Path
) -> None:
    task = load_tasks(tasks_root).by_id(1)
    coded_video(task.video, frames=75, fps=10)  # 7.5 s
    result = await _generate(ModelConfig(name="local:gpt-4o-2024-05-13", base_url=fake.url), task)
    images = _images(fake.requests[0])
    assert len(images) == 1 + 7  # one sheet, int(7.5) frames
    assert [frame_number_of(d) for _, d in images[1:]] == [0, 10, 20, 30, 40, 50, 60]
    assert fake.requests[0]["max_tokens"] == 4096 and result.preset == "gpt-4o-2024-05-13"
    # The default protocol sends 8 frames of the same video (its own rule, unchanged).
    await _generate(ModelConfig(name="local:gpt-4o-2024-05-13", base_url=fake.url), task, protocol="default")
    default_body = fake.requests[1]
    assert len(_images(default_body)) == 1 + 8 and "max_completion_tokens" not in default_body


@pytest.mark.anyio
async def test_settings_the_user_set_win_over_the_preset(fake: FakeOpenAI, tasks_root: Path) -> None:
    task = load_tasks(tasks_root).by_id(1)
    _add_sheets(task)
    config = ModelConfig(name="local:qwen2.5-vl", base_url=fake.url, max_tokens=1234, image_budget=5)
    result = await _generate(config, task)
    body = fake.requests[0]
    assert body["max_tokens"] == 1234
    # 13 sheets over a budget of 5: all 13 are sent all the same, and no frame.
    assert len(_images(body)) == 13 and result.images.sheets == 13
    assert result.images.frames == 0 and result.images.video == "none" and result.sampling is None
    effective, preset = for_protocol(config, OFFICIAL)
    assert preset is not None and preset.key == "qwen"
    assert (effective.max_tokens, effective.image_budget, effective.frame_cap) == (1234, 5, 20)
    assert effective.timeout == 300


@pytest.mark.anyio
async def test_claude_preset_downscales_every_image_as_cv2_does(
    fake: FakeOpenAI, tasks_root: Path, tmp_path: Path
) -> None:
    task = load_tasks(tasks_root).by_id(1)
    coded_video(task.video, frames=12, fps=4, size=(1280, 720))
    big = task.sheets_dir / "stitched_image_02.png"
    rng = np.random.default_rng(7)
    Image.fromarray(rng.integers(0, 255, (700, 2400, 3), dtype=np.uint8)).save(big)
    result = await _generate(ModelConfig(name="local:claude-sonnet-4-5", base_url=fake.url), task)
    body = fake.requests[0]
    assert body["max_tokens"] == 16384 and body["temperature"] == 0
    images = _images(body)
    assert len(images) == 2 + 3
    small_sheet, big_sheet = images[0][1], images[1][1]
    assert small_sheet == (task.sheets_dir / "stitched_image_01.png").read_bytes()  # small: untouched
    assert _size(big_sheet) == (1000, 291)  # int(700 * 1000 / 2400), not round() = 292
    expected = cv2.resize(cv2.imread(str(big)), (1000, 291), interpolation=cv2.INTER_AREA)
    sent = cv2.imdecode(np.frombuffer(big_sheet, np.uint8), cv2.IMREAD_COLOR)
    assert np.array_equal(sent, expected)  # INTER_AREA pixels, PNG kept PNG
    assert [(m, _size(d)) for m, d in images[2:]] == [("image/jpeg", (1000, 562))] * 3
    assert [frame_number_of(d) for _, d in images[2:]] == [0, 4, 8]
    assert result.preset == "claude" and result.images.max_image_side == 1000
    assert result.sent is not None and result.sent.timeout_s == 300


@pytest.mark.anyio
async def test_reasoning_model_drops_temperature_and_the_record_says_so(
    fake: FakeOpenAI, tasks_root: Path, tmp_path: Path
) -> None:
    task = load_tasks(tasks_root).by_id(1)
    with pytest.warns(UserWarning, match="Sampling parameters"):
        result = await _generate(ModelConfig(name="local:gpt-5", base_url=fake.url), task)
    body = fake.requests[0]
    assert "temperature" not in body and body["max_tokens"] == 16384
    assert result.settings["temperature"] == 0.0  # asked for ...
    assert result.sent is not None and result.sent.temperature is None  # ... but not sent
    assert result.sent.dropped == ["temperature"] and result.sent.max_tokens == 16384
    assert result.preset == "gpt-5" and result.sent.timeout_s == 600
    folder = write_result(tmp_path / "out", result)
    assert folder.name == "local_gpt-5"
    record = json.loads((folder / "generation.json").read_text())
    assert record["sent"]["dropped"] == ["temperature"] and record["sent"]["fields"]["model"] == "gpt-5"
    assert read_record(folder).sent == result.sent


@pytest.mark.anyio
async def test_prompt_file_replaces_the_instructions(
    fake: FakeOpenAI, tasks_root: Path, tmp_path: Path
) -> None:
    task = load_tasks(tasks_root).by_id(1)
    path = tmp_path / "prompt.txt"
    path.write_text("Rebuild it. The resolution is {resolution}. Keep {{braces}}.\n", encoding="utf-8")
    prompt = load_prompt_file(path)
    config = ModelConfig(name="local:gpt-4o", base_url=fake.url)
    result = await _generate(config, task, prompt=prompt)
    assert _text(fake.requests[0]) == "Rebuild it. The resolution is 640x360. Keep {braces}.\n"
    assert result.prompt_file == str(path)
    assert result.prompt_file_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    # A prompt with other braces (CSS) keeps them; only {resolution} is filled.
    path.write_text("body { margin: 0 } at {resolution}", encoding="utf-8")
    await _generate(config, task, prompt=load_prompt_file(path), protocol="default")
    assert _text(fake.requests[1]) == "body { margin: 0 } at 640x360"
    # Without a prompt file our own instructions are sent.
    await _generate(config, task)
    assert "front-end engineer" in _text(fake.requests[2])


def test_presets_are_matched_by_name_first_match_wins() -> None:
    cases = {
        "claude-sonnet-4-5": "claude",
        "GLM-4.5V": "glm",
        "Qwen/Qwen2.5-VL-72B-Instruct": "qwen",
        "gpt-4o-2024-05-13": "gpt-4o-2024-05-13",
        "gpt-4o": "default",
        "gpt-5-mini": "gpt-5",
        "doubao-seed-1-6-thinking-250615": "doubao-seed-1-6-thinking-250615",
        "gpt-4.1-2025-04-14": "gpt-4.1-2025-04-14",
        "gpt-4.1": "default",
        "claude-qwen-mix": "claude",  # claude comes first in the table
        "gemini-2.5-pro": "default",
    }
    assert {name: preset_for(name).key for name in cases} == cases
    qwen = preset_for("qwen")
    assert (qwen.max_tokens, qwen.image_budget, qwen.frame_cap, qwen.timeout) == (4096, 20, 20, 300)
    glm = preset_for("glm")
    assert (glm.max_tokens, glm.image_budget, glm.frame_cap, glm.timeout) == (16384, 20, 20, 600)
    assert preset_for("claude").max_image_side == 1000 and preset_for("x").max_image_side is None
    # The provider prefix is not part of the name matched; the default protocol applies no preset.
    config = ModelConfig(name="anthropic:claude-opus-4")
    assert for_protocol(config, OFFICIAL)[1] == preset_for("claude")
    assert for_protocol(config, EvalProtocol.default) == (config, None)


def test_what_was_sent_is_read_from_each_api_shape() -> None:
    asked = {"temperature": 0.0, "max_tokens": 4096, "timeout": 300}
    anthropic = summarize(
        WireRequest({"model": "claude-x", "max_tokens": 4096, "temperature": 0}, 300.0), asked
    )
    assert (anthropic.max_tokens_field, anthropic.temperature, anthropic.dropped) == ("max_tokens", 0.0, [])
    google = summarize(
        WireRequest({"generationConfig": {"temperature": 0, "maxOutputTokens": 2048}}, None), asked
    )
    assert google.max_tokens_field == "generationConfig.maxOutputTokens" and google.changed == {
        "max_tokens": 2048
    }
    bare = summarize(WireRequest({"model": "o3"}, 600.0), asked)
    assert bare.dropped == ["temperature", "max_tokens"]
    line = sent_line("openai_o3", bare.model_dump())
    assert (
        line == "openai_o3: sent timeout=600s; not sent (dropped by the model class): temperature, max_tokens"
    )


@pytest.mark.anyio
async def test_an_openai_model_sends_the_official_request_field_by_field(
    fake: FakeOpenAI, tasks_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``openai:gpt-4.1`` under the official protocol: Chat Completions, not the Responses API,
    and the body the official generator's OpenAI client sends, built here from its rules: the model
    id without our prefix, one user message of the prompt then every image as a data URI, the
    preset's ``max_tokens`` and temperature 0, nothing else."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)  # where the OpenAI client sends, as officially
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    task = load_tasks(tasks_root).by_id(1)
    result = await _generate(ModelConfig(name="openai:gpt-4.1"), task)
    assert result.status == "ok", result.error
    [body] = fake.requests  # (the fake answers only /v1/chat/completions)
    parts = body["messages"][0]["content"]
    want: dict[str, Any] = {
        "model": "gpt-4.1",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": _text(body)}]
                + [
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:{media};base64,{base64.b64encode(data).decode()}"},
                    }
                    for media, data in _images(body)
                ],
            }
        ],
        "max_tokens": preset_for("gpt-4.1").max_tokens,
        "temperature": 0.0,
    }
    extra = set(body) - set(want)
    assert extra <= {"stream"} and not body.get("stream"), extra  # the SDK may say "stream": false
    assert {k: body[k] for k in want} == want
    assert len(parts) == 1 + result.images.sheets + result.images.frames
