"""Offline baselines: ``oracle`` (the recorded page), ``screenshot`` (a picture of it), ``blank``."""

from __future__ import annotations

import base64
import io
import time

import anyio
import anyio.to_thread
from PIL import Image

from iwr_bench.agents.generation.errors import FailureKind
from iwr_bench.agents.generation.postprocess import resolve_assets
from iwr_bench.agents.generation.records import ErrorInfo, GenerationResult, ImageCounts
from iwr_bench.dataset.frames import SamplingIdentity, VideoError, sample_frames
from iwr_bench.dataset.layout import Task
from iwr_bench.dataset.models import Resolution
from iwr_bench.registry import register


def _result(task: Task, name: str, start: float, **fields: object) -> GenerationResult:
    result = GenerationResult(task_id=task.id, generator=name, model=name, images=ImageCounts(video="none"))
    return result.model_copy(update={"latency_s": time.monotonic() - start, **fields})


def _failure(
    task: Task, name: str, start: float, kind: FailureKind, exc_type: str, message: str
) -> GenerationResult:
    error = ErrorInfo(kind=kind, type=exc_type, message=message)
    return _result(task, name, start, status="failed", error=error)


class OracleGenerator:
    """Returns the task's recorded page (``reference/index.html``): the ceiling of the benchmark.

    The rest of the recorded bundle (stylesheets, scripts, fonts, images at their original paths)
    is handed over as ``page_files`` and written beside the page, so it is served exactly as it
    was while recording.
    """

    name = "oracle"

    def __init__(self, asset_base: str | None = None) -> None:
        self.asset_base = asset_base

    async def __call__(self, task: Task) -> GenerationResult:
        """The reference page and its bundle; an asset placeholder in the page is resolved as in a
        generated page (when written, relative to the task's assets; or to ``asset_base`` when given)."""
        start = time.monotonic()
        page = task.reference_page
        if page is None:
            msg = f"task {task.id} has no reference/index.html in {task.folder}"
            return _failure(task, self.name, start, FailureKind.no_reference, "FileNotFoundError", msg)
        try:
            text = await anyio.to_thread.run_sync(lambda: page.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            return _failure(task, self.name, start, FailureKind.no_reference, type(exc).__name__, str(exc))
        html = text if self.asset_base is None else resolve_assets(text, self.asset_base)
        bundle = str(page.parent) if any(p.name != page.name for p in page.parent.iterdir()) else None
        return _result(
            task,
            self.name,
            start,
            html=html,
            asset_base=self.asset_base,
            assets_dir=str(task.assets_dir),
            page_files=bundle,
        )


def screenshot_page(image: Image.Image, resolution: Resolution) -> str:
    """A static page showing ``image`` at exactly ``resolution``: no margins, no scrollbars."""
    w, h = resolution.width, resolution.height
    if image.size != (w, h):
        image = image.resize((w, h), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="PNG", optimize=True)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>screenshot</title>\n'
        f"<style>html,body{{margin:0;padding:0;width:{w}px;height:{h}px;overflow:hidden}}"
        "img{display:block;border:0}</style></head>\n"
        f'<body><img src="data:image/png;base64,{data}" width="{w}" height="{h}" alt=""></body></html>\n'
    )


class ScreenshotGenerator:
    """A page that is only the video's first frame: looks right at step 0, does nothing."""

    name = "screenshot"

    async def __call__(self, task: Task) -> GenerationResult:
        """The first frame, embedded as a data: URI PNG at the task resolution."""
        start = time.monotonic()
        try:
            sampled = await anyio.to_thread.run_sync(sample_frames, task.video, 1.0, 1)
        except VideoError as exc:
            return _failure(task, self.name, start, FailureKind.video_error, type(exc).__name__, str(exc))
        if not sampled.frames:
            msg = f"{task.video} gave no frame"
            return _failure(task, self.name, start, FailureKind.video_error, "VideoError", msg)
        html = await anyio.to_thread.run_sync(screenshot_page, sampled.frames[0].image, task.resolution)
        sampling: SamplingIdentity = sampled.identity
        return _result(task, self.name, start, html=html, sampling=sampling)


class BlankGenerator:
    """An empty page: the floor of the benchmark."""

    name = "blank"

    async def __call__(self, task: Task) -> GenerationResult:
        """An empty page (status ``empty``)."""
        return _result(task, self.name, time.monotonic(), status="empty", html="")


@register("generator", "oracle")
def oracle(asset_base: str | None = None) -> OracleGenerator:
    """The reference-page baseline."""
    return OracleGenerator(asset_base)


@register("generator", "screenshot")
def screenshot() -> ScreenshotGenerator:
    """The first-frame picture baseline."""
    return ScreenshotGenerator()


@register("generator", "blank")
def blank() -> BlankGenerator:
    """The empty-page baseline."""
    return BlankGenerator()


BASELINES = ("oracle", "screenshot", "blank")
