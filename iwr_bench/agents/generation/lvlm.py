"""The vision-language-model generator: sample, prompt, call (through wrappers), post-process."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self

import anyio
import anyio.to_thread
from pydantic_ai import BinaryContent
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior
from pydantic_ai.models import Model

from iwr_bench.agents.generation.calls import AgentCaller, Caller, ModelAnswer, ModelCall
from iwr_bench.agents.generation.config import ModelConfig
from iwr_bench.agents.generation.errors import FailureKind, GenerationError
from iwr_bench.agents.generation.models import accepts_video, build_model
from iwr_bench.agents.generation.official import Preset, for_protocol, frame_parts, sheet_parts
from iwr_bench.agents.generation.postprocess import official_postprocess, postprocess
from iwr_bench.agents.generation.prompt import (
    PromptFile,
    build_content,
    encode_image,
    encode_sheets,
    load_prompt_file,
    render_instructions,
)
from iwr_bench.agents.generation.records import CallUsage, ErrorInfo, GenerationResult, ImageCounts
from iwr_bench.agents.generation.wire import WireRequest, capturing, summarize
from iwr_bench.agents.generation.wrappers import (
    Budget,
    BudgetedCaller,
    CachingCaller,
    ResponseCache,
    RetryingCaller,
    RetryPolicy,
    classify,
)
from iwr_bench.dataset.frames import (
    DEFAULT_FPS,
    SampledFrames,
    SamplingIdentity,
    VideoError,
    file_sha256,
    plan_images,
    sample_frames,
    sample_frames_official,
)
from iwr_bench.dataset.layout import Task
from iwr_bench.dataset.models import Resolution
from iwr_bench.protocol import EvalProtocol
from iwr_bench.registry import register

log = logging.getLogger(__name__)

VideoMode = Literal["frames", "native", "none"]


@dataclass
class _Prepared:
    call: ModelCall
    images: ImageCounts
    sampling: SamplingIdentity | None
    instructions_sha256: str


class LVLMGenerator:
    """Generates a page with a vision-language model behind a :class:`Caller` stack.

    Under ``protocol=official`` the request follows the official generator (see ``official.py``):
    pass the config already completed by :func:`~iwr_bench.agents.generation.official.for_protocol`
    and the preset it matched.
    """

    def __init__(
        self,
        config: ModelConfig,
        caller: Caller,
        *,
        model: Model | None = None,
        asset_base: str | None = None,
        fps: float = DEFAULT_FPS,
        protocol: EvalProtocol = EvalProtocol.default,
        preset: Preset | None = None,
        prompt: PromptFile | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.caller = caller
        self.model = model
        official = protocol is EvalProtocol.official
        self.native_video = (
            not official and config.native_video and model is not None and accepts_video(model)
        )
        self.asset_base = asset_base
        self.fps = fps
        self.protocol = protocol
        self.preset = preset
        self.prompt = prompt

    async def __aenter__(self) -> Self:
        """Open the model's HTTP client for a run of calls (closed again on exit)."""
        if self.model is not None:
            await self.model.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the model's HTTP client if this generator opened it."""
        if self.model is not None:
            await self.model.__aexit__(None, None, None)

    async def __call__(self, task: Task) -> GenerationResult:
        """Generate one page; every failure becomes a recorded result."""
        start = time.monotonic()
        base = GenerationResult(
            task_id=task.id,
            generator="lvlm",
            model=self.name,
            folder=self.config.folder,
            protocol=self.protocol,
            preset=self.preset.key if self.preset else None,
            settings=self.config.model_settings(),
            asset_base=self.asset_base,
            assets_dir=str(task.assets_dir),
            prompt_file=self.prompt.path if self.prompt else None,
            prompt_file_sha256=self.prompt.sha256 if self.prompt else None,
        )
        try:
            prepared = await self._prepare(task)
        except VideoError as exc:
            return _failed(base, FailureKind.video_error, exc, start)
        base.images = prepared.images
        base.sampling = prepared.sampling
        base.instructions_sha256 = prepared.instructions_sha256
        with capturing() as wire:
            try:
                answer = await self.caller(prepared.call)
            except GenerationError as exc:
                return _failed(base, exc.kind, exc, start, attempts=exc.attempts, wire=wire)
            except (ModelAPIError, UnexpectedModelBehavior, TimeoutError) as exc:
                return _failed(base, classify(exc), exc, start, attempts=1, wire=wire)
            except Exception as exc:
                log.exception("generation of task %s with %s failed", task.id, self.name)
                return _failed(base, FailureKind.internal_error, exc, start)
        return self._finish(base, answer, start)

    def _finish(self, base: GenerationResult, answer: ModelAnswer, start: float) -> GenerationResult:
        if self.protocol is EvalProtocol.official:
            page = official_postprocess(answer.text, self.asset_base)
        else:
            page = postprocess(answer.text, self.asset_base)
        if answer.text.strip() and not page.strip():  # text, but nothing of it makes a page
            failed = _failed(base, FailureKind.empty_page, ValueError(_NO_PAGE), start)
            update = {"raw": answer.text, "usage": answer.usage, "cache_hit": answer.cache_hit}
            update |= {"attempts": 0 if answer.cache_hit else answer.attempts, "sent": answer.sent}
            return failed.model_copy(update={**update, "finish_reason": answer.finish_reason})
        if answer.finish_reason == "length":
            status: Literal["ok", "empty", "truncated"] = "truncated"
        elif not answer.text.strip():
            status = "empty"
        else:
            status = "ok"
        return base.model_copy(
            update={
                "status": status,
                "html": page,
                "raw": answer.text,
                "usage": answer.usage,
                "cache_hit": answer.cache_hit,
                "attempts": 0 if answer.cache_hit else answer.attempts,
                "finish_reason": answer.finish_reason,
                "sent": answer.sent,
                "latency_s": time.monotonic() - start,
            }
        )

    def _instructions(self, resolution: Resolution, n_frames: int, mode: VideoMode) -> str:
        if self.prompt is not None:
            return self.prompt.render(resolution)
        return render_instructions(resolution, n_frames, mode)

    async def _prepare(self, task: Task) -> _Prepared:
        if self.protocol is EvalProtocol.official:
            return await self._prepare_official(task)
        cfg = self.config
        plan = plan_images(len(task.sheet_files), cfg.image_budget, cfg.frame_cap)
        sheets_paths = task.sheet_files[: plan.sheets]
        if plan.sheets < len(task.sheet_files):
            n = len(task.sheet_files)
            log.warning("task %s: %s sends only %d of %d sheets", task.id, self.name, plan.sheets, n)
        sheets = await anyio.to_thread.run_sync(encode_sheets, sheets_paths, cfg.max_image_side)
        sampling: SamplingIdentity | None = None
        video_parts: list[BinaryContent] = []
        mode: VideoMode
        if plan.frames == 0:
            mode, video_key = "none", "none"
        elif self.native_video:
            mode = "native"
            video_key = await anyio.to_thread.run_sync(_video_sha, task.video)
            data = await anyio.to_thread.run_sync(task.video.read_bytes)
            video_parts = [BinaryContent(data, media_type="video/mp4")]
        else:
            mode = "frames"
            sampled = await anyio.to_thread.run_sync(sample_frames, task.video, self.fps, plan.frames)
            sampling, video_key = sampled.identity, sampled.identity.key()
            video_parts = await anyio.to_thread.run_sync(self._encode_frames, sampled)
        instructions = self._instructions(task.resolution, len(video_parts), mode)
        return await self._assemble(
            task, instructions, sheets_paths, sheets, video_parts, mode, sampling, video_key
        )

    async def _prepare_official(self, task: Task) -> _Prepared:
        """The official request: every sheet as its file, then the official frames (JPEG q95)."""
        cfg = self.config
        sheets_paths = task.sheet_files
        cap = min(cfg.frame_cap, cfg.image_budget - len(sheets_paths))
        sheets = await anyio.to_thread.run_sync(sheet_parts, sheets_paths, cfg.max_image_side)
        sampling: SamplingIdentity | None = None
        frames: list[BinaryContent] = []
        if cap > 0:
            try:
                sample = await anyio.to_thread.run_sync(sample_frames_official, task.video, cap)
            except VideoError as exc:  # the official script then sends the sheets alone
                log.warning("task %s: %s; sending the sheets only, as the official script does", task.id, exc)
            else:
                sampling = sample.identity
                frames = await anyio.to_thread.run_sync(frame_parts, sample, cfg.max_image_side)
        mode: VideoMode = "frames" if frames else "none"
        video_key = sampling.key() if sampling else "none"
        instructions = self._instructions(task.resolution, len(frames), mode)
        return await self._assemble(
            task, instructions, sheets_paths, sheets, frames, mode, sampling, video_key
        )

    async def _assemble(
        self,
        task: Task,
        instructions: str,
        sheets_paths: list[Path],
        sheets: list[BinaryContent],
        video_parts: list[BinaryContent],
        mode: VideoMode,
        sampling: SamplingIdentity | None,
        video_key: str,
    ) -> _Prepared:
        cfg = self.config
        instructions_sha = hashlib.sha256(instructions.encode()).hexdigest()
        sheet_digests = await anyio.to_thread.run_sync(lambda: [file_sha256(p) for p in sheets_paths])
        key_parts: dict[str, Any] = {
            "endpoint": cfg.base_url,
            "model_id": cfg.server_model_id if cfg.base_url else None,
            "instructions": instructions_sha,
            "video": video_key,
            "video_mode": mode,
            "sheets": sheet_digests,
            "max_image_side": cfg.max_image_side,
            "frame_format": cfg.frame_format,
        }
        if self.protocol is EvalProtocol.official:
            key_parts["protocol"] = self.protocol.value
        call = ModelCall(
            model_name=cfg.name,
            content=build_content(instructions, sheets, video_parts),
            settings=cfg.model_settings(),
            key_parts=key_parts,
        )
        images = ImageCounts(
            sheets=len(sheets),
            sheet_names=[p.name for p in sheets_paths],
            sheets_available=len(task.sheet_files),
            frames=len(video_parts) if mode == "frames" else 0,
            video=mode,
            max_image_side=cfg.max_image_side,
        )
        return _Prepared(call=call, images=images, sampling=sampling, instructions_sha256=instructions_sha)

    def _encode_frames(self, sampled: SampledFrames) -> list[BinaryContent]:
        cfg = self.config
        return [encode_image(f.image, cfg.max_image_side, cfg.frame_format) for f in sampled.frames]


def _video_sha(path: Path) -> str:
    if not path.is_file():
        raise VideoError(f"{path} does not exist")
    return file_sha256(path)


_NO_PAGE = "the answer has text, but no HTML page was found in it once extracted"


def _failed(
    base: GenerationResult,
    kind: FailureKind,
    exc: BaseException,
    start: float,
    *,
    attempts: int = 0,
    wire: list[WireRequest] | None = None,
) -> GenerationResult:
    """A failed result: an empty page, scored 0, with the error (and the last request sent) recorded."""
    return base.model_copy(
        update={
            "sent": summarize(wire[-1], base.settings) if wire else None,
            "status": "failed",
            "error": ErrorInfo(kind=kind, type=type(exc).__name__, message=str(exc)),
            "html": "",
            "usage": CallUsage(),
            "attempts": attempts,
            "latency_s": time.monotonic() - start,
        }
    )


def build_caller(
    config: ModelConfig,
    model: Model,
    *,
    cache: ResponseCache | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
    slot: Callable[[Caller], Caller] | None = None,
) -> Caller:
    """The caller stack for one model, built here only (the engine's generators and the registered
    ``lvlm`` design alike): cache -> retries -> slot -> budget -> pydantic-ai agent.

    ``slot`` wraps each single request in the provider's limit (the engine gives one): it sits
    under the retries, so a backoff sleep holds no slot, and over the budget, so the budget is
    checked when the request is about to go out, not while it waits for a slot.
    """
    policy = retry or RetryPolicy(retries=config.retries, attempt_timeout=config.timeout * 1.5 + 5)
    caller: Caller = AgentCaller(model, price=config.price)
    if budget is not None:
        caller = BudgetedCaller(caller, budget)
    if slot is not None:
        caller = slot(caller)
    caller = RetryingCaller(caller, policy)
    if cache is not None:
        caller = CachingCaller(caller, cache)
    return caller


def build_generator(
    config: ModelConfig,
    *,
    cache: ResponseCache | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
    slot: Callable[[Caller], Caller] | None = None,
    asset_base: str | None = None,
    model: Model | None = None,
    protocol: EvalProtocol = EvalProtocol.default,
    prompt: PromptFile | None = None,
) -> LVLMGenerator:
    """A ready generator for ``config`` (the engine's entry point).

    ``budget`` may be shared by every model of a run; ``slot`` is the provider's limit (see
    :func:`build_caller`). ``model`` replaces the one ``config``
    names (tests pass a ``FunctionModel``). Under ``protocol=official`` the official preset fills
    the settings ``config`` leaves unset. ``asset_base=None``: the page refers to the task's assets
    by a path relative to its folder, resolved when it is written.

    Raises:
        UserError: for an unknown or uninstalled provider or a missing API key (before any call).
    """
    config, preset = for_protocol(config, protocol)
    model = model or build_model(config, official=protocol is EvalProtocol.official)
    caller = build_caller(config, model, cache=cache, budget=budget, retry=retry, slot=slot)
    return LVLMGenerator(
        config, caller, model=model, asset_base=asset_base, protocol=protocol, preset=preset, prompt=prompt
    )


@register("generator", "lvlm")
def lvlm(
    model: dict[str, Any] | str,
    cache_dir: str | None = None,
    budget_usd: float | None = None,
    asset_base: str | None = None,
    protocol: str = "default",
    prompt_file: str | None = None,
) -> LVLMGenerator:
    """Registered factory: a model config (a ``[[models]]`` table, or just a name) to a generator."""
    config = ModelConfig(name=model) if isinstance(model, str) else ModelConfig.model_validate(model)
    cache = ResponseCache(Path(cache_dir)) if cache_dir else None
    budget = Budget(budget_usd) if budget_usd is not None else None
    prompt = load_prompt_file(prompt_file) if prompt_file else None
    return build_generator(
        config,
        cache=cache,
        budget=budget,
        asset_base=asset_base,
        protocol=EvalProtocol(protocol),
        prompt=prompt,
    )
