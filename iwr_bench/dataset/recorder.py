"""``iwr record``: turn a reference site plus an action script into a task in the official layout.

The site is served on 127.0.0.1 and driven in the same sandboxed Chromium the judges use, through
the same tools (elements found by the recording selector are acted on by their ``observe``
index). While it runs, the viewport is screenshotted about ten times a second with a visible
pause around every action; the frames become a constant-rate H.264 video in which each capture
is held until the next. Checkpoints are the settled screenshots.

Every file the page requests while recorded is kept: the reference page is stored as a
self-contained bundle (see :mod:`iwr_bench.dataset.bundle`) that the oracle serves at its original
paths. The seed of ``Math.random`` and the start of the page clock are stored with the task, so
every page judged for it starts from the same random state. Everything is written to a staging
folder first; a ``prove`` check (the oracle judged with the offline judges) may then refuse it,
and only a task that passed is moved into place.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from PIL import Image, ImageDraw
from pydantic import BaseModel, Field

from iwr_bench.dataset.bundle import anonymise, asset_paths, bundle_files, requested_files
from iwr_bench.dataset.layout import (
    ASSETS_DIR,
    CHECKPOINTS_DIR,
    REFERENCE_DIR,
    SHEETS_DIR,
    TASK_RECORD,
    VIDEO_NAME,
    Task,
)
from iwr_bench.dataset.media import write_contact_sheets, write_video
from iwr_bench.dataset.models import TaskRecord, pressed_key, scroll_direction, scroll_region, typed_text
from iwr_bench.dataset.script import ActionScript, ScriptAction
from iwr_bench.dataset.vendor import VENDOR_DIR, VendorSources, vendor_urls
from iwr_bench.errors import UserError
from iwr_bench.tools.errors import PageFailure, ToolRetry
from iwr_bench.tools.models import BlockedRequest, PageSpec, SettleConfig, Viewport
from iwr_bench.tools.pool import PagePool, PoolConfig, html_seed
from iwr_bench.tools.scripts import AIM_JS
from iwr_bench.tools.tools import PageTools

PLACEHOLDER = "__PLACEHOLDER_ASSETS_BASE_DIR__"

_INDEX_OF_JS = (
    "(() => { const el = document.querySelector(%s); return el ? window.__iwr__.els.indexOf(el) : -2; })()"
)
_CENTER_JS = (
    "(() => {"
    + AIM_JS
    + """
  const el = document.querySelector(%s);
  if (!el) return null;
  const { r, through } = aim(el);  // not displayed (shown on hover): its displayed parent's box
  return { x: r.left + r.width / 2, y: r.top + r.height / 2, hidden: through };
})()
"""
)
_SCROLL_TOP_JS = "document.querySelector(%s).scrollTop"
_HAS_TEXT_JS = "document.body ? document.body.innerText.includes(%s) : false"
_PAGE_TEXT_JS = "document.body ? document.body.innerText : ''"


class RecordError(UserError):
    """The script could not be performed; names the step (1-based) and the cause."""


class BlockedRequests(RecordError):
    """The sandbox refused requests of the site while recording."""

    def __init__(self, message: str, other_origin: dict[str, str]) -> None:
        super().__init__(message)
        self.other_origin = other_origin
        """The URLs of other origins among them (what ``--vendor`` can bring in), each with the
        resource type that asked for it."""


class RecordConfig(BaseModel):
    """Pacing and encoding of a recording."""

    fps: int = Field(default=10, ge=1, le=30)
    """Frame rate of the video."""
    capture_interval: float = Field(default=0.1, gt=0)
    """Seconds between screenshots while holding a state."""
    hold_initial: float = Field(default=2.0, ge=0)
    """Seconds the initial state is shown before the first action."""
    lead_in: float = Field(default=0.6, ge=0)
    """Seconds the cursor rests on the target before acting."""
    hold_after: float = Field(default=1.6, ge=0)
    """Seconds each resulting state is shown (>= 1 so 1 FPS sampling sees it)."""
    crf: int = Field(default=30, ge=0, le=51)
    """H.264 quality (higher is smaller)."""
    settle: SettleConfig = SettleConfig(max_wait=4.0, stable_frames=3)
    """How to decide a state has settled before a checkpoint."""


@dataclass
class _Capture:
    t: float
    png: bytes
    cursor: tuple[float, float] | None


@dataclass
class _Reel:
    """Screenshots with their times, later encoded at a constant rate."""

    tools: PageTools
    interval: float
    start: float = field(default_factory=time.perf_counter)
    shots: list[_Capture] = field(default_factory=list)
    cursor: tuple[float, float] | None = None

    async def hold(self, seconds: float) -> None:
        end = time.perf_counter() + seconds
        while True:
            self.shots.append(
                _Capture(time.perf_counter() - self.start, await self.tools.screenshot(), self.cursor)
            )
            left = end - time.perf_counter()
            if left <= 0:
                return
            await anyio.sleep(min(self.interval, left))

    def frames(self, fps: int) -> list[Image.Image]:
        if not self.shots:
            return []
        duration = self.shots[-1].t + 1.0 / fps
        decoded: dict[int, Image.Image] = {}
        out: list[Image.Image] = []
        j = 0
        for i in range(max(1, round(duration * fps))):
            t = i / fps
            while j + 1 < len(self.shots) and self.shots[j + 1].t <= t:
                j += 1
            if j not in decoded:
                decoded[j] = _with_cursor(self.shots[j])
            out.append(decoded[j])
        return out


def _with_cursor(shot: _Capture) -> Image.Image:
    img = Image.open(io.BytesIO(shot.png)).convert("RGB")
    if shot.cursor is not None:
        x, y = shot.cursor
        draw = ImageDraw.Draw(img)
        draw.ellipse((x - 9, y - 9, x + 9, y + 9), outline=(230, 40, 40), width=3)
        draw.ellipse((x - 2, y - 2, x + 2, y + 2), fill=(230, 40, 40))
    return img


class OracleProof(BaseModel):
    """Whether a recorded task's own reference page passes its own judging."""

    ifs: float
    """IFS of the reference page, in [0, 1] (must be 1)."""
    checkpoint_scores: dict[int, float] = Field(default_factory=dict[int, float])
    """Visual score (LVS) of each checkpoint against its recording, by step."""
    pixel_identical: dict[int, bool] = Field(default_factory=dict[int, bool])
    """Whether each checkpoint's screenshot has exactly its recording's pixels, by step (no metric
    model needed)."""
    failed_requests: list[str] = Field(default_factory=list[str])
    """Requests that failed (404) or that the sandbox blocked."""
    problems: list[str] = Field(default_factory=list[str])
    """Each reason the task does not prove itself (which action, request or checkpoint); empty: proven."""


class Prover(Protocol):
    """Judges a staged task's reference page on ``pool`` (see ``iwr_bench.agents.proof``)."""

    async def __call__(self, task: Task, pool: PagePool, *, evidence: Path | None = None) -> OracleProof:
        """The proof of ``task``; with ``evidence``, its screenshots and replay report stay there."""
        ...


Progress = Callable[[str], None]
"""Receives one line per recording step (``iwr record`` prints them)."""

FAILED_DIR = ".failed"
"""Folder of ``out_root`` where a task that did not prove itself is kept, with the proof's evidence."""


class Recorded(BaseModel):
    """What ``record`` wrote."""

    folder: Path
    """The task folder."""
    warnings: list[str] = Field(default_factory=list[str])
    """Things the recorder could not check (assertions without ``record.expect_text``)."""
    proof: OracleProof | None = None
    """The oracle's proof, when a prover ran."""


@dataclass
class _Recording:
    checkpoints: list[bytes]
    reel: _Reel
    requests: list[str]
    record: TaskRecord


async def record(
    site: Path,
    script: ActionScript,
    out_root: Path,
    *,
    stem: str = "data",
    config: RecordConfig | None = None,
    pool: PagePool | None = None,
    prove: Prover | None = None,
    progress: Progress | None = None,
    vendor: VendorSources | None = None,
) -> Recorded:
    """Record ``script`` on ``site`` and write the task under ``out_root/<stem>/<id>``.

    ``out_root/<stem>.jsonl`` gets the record (replacing one with the same id);
    ``out_root/asset_maps/<id>.json`` maps original asset paths to anonymised names. With
    ``prove``, the staged task's reference page is judged first and the task is written only when
    it proves itself.

    ``progress`` gets a line as each step is recorded and as the proof starts. A task that does
    not prove itself is kept, with the proof's screenshots and replay report, under
    ``out_root/.failed/<id>/`` (``task/`` and ``proof/``), and the error says where.

    ``vendor``: where files the site loads from other origins may come from. The site is copied,
    the refused files are brought into the copy's ``vendor/`` and the copy pointed at them, and
    recording starts again (up to :data:`VENDOR_ROUNDS` times); ``site`` itself is not changed.

    Raises:
        RecordError: when a step cannot be performed, its expected text is absent, a request of
            the site fails, or the task does not prove itself.
        UserError: when the site has no index.html.
    """
    config = config or RecordConfig()
    site = site.resolve()
    if not (site / "index.html").is_file():
        raise UserError(f"{site} has no index.html")
    say = progress or (lambda line: None)
    if pool is None:
        async with PagePool(PoolConfig(size=1, settle=config.settle)) as own:
            return await _record_vendoring(own, site, script, out_root, stem, config, prove, say, vendor)
    return await _record_vendoring(pool, site, script, out_root, stem, config, prove, say, vendor)


VENDOR_ROUNDS = 3
"""Recordings tried with ``vendor`` (a file brought in may name more, as a script loading a font)."""


async def _record_vendoring(
    pool: PagePool,
    site: Path,
    script: ActionScript,
    out_root: Path,
    stem: str,
    config: RecordConfig,
    prove: Prover | None,
    say: Progress,
    vendor: VendorSources | None,
) -> Recorded:
    if vendor is None:
        return await _record_with(pool, site, script, out_root, stem, config, prove, say)
    out_root.mkdir(parents=True, exist_ok=True)
    copy = out_root / f".vendoring-{script.id}-{os.getpid()}"
    try:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(copy, ignore_errors=True))
        await anyio.to_thread.run_sync(lambda: shutil.copytree(site, copy))
        for attempt in range(1, VENDOR_ROUNDS + 1):
            try:
                return await _record_with(pool, copy, script, out_root, stem, config, prove, say)
            except BlockedRequests as exc:
                if not exc.other_origin or attempt == VENDOR_ROUNDS:
                    raise
                report = await vendor_urls(copy, exc.other_origin, vendor)
                if report.missing:
                    lines = "\n".join(f"  {url}: {why}" for url, why in report.missing.items())
                    raise RecordError(
                        f"the site loads {len(report.missing)} file(s) from other origins that could "
                        f"not be brought in from {vendor.describe()}:\n{lines}\nPut each in a "
                        "--vendor folder (as <host>/<path>, in its npm package, or by file name)"
                    ) from None
                if report.unreferenced:
                    raise RecordError(
                        "brought in, but no HTML, CSS or script file of the site names these URLs "
                        "literally (a script builds them), so the page cannot be pointed at the copies: "
                        + ", ".join(report.unreferenced[:5])
                    ) from None
                sources = sorted({f.source for f in report.fetched})
                say(
                    f"brought {len(report.fetched)} file(s) from other origins into "
                    f"{VENDOR_DIR}/ (from {', '.join(sources)}); recording again"
                )
        raise AssertionError("unreachable")  # pragma: no cover
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(copy, ignore_errors=True))


async def _record_with(
    pool: PagePool,
    site: Path,
    script: ActionScript,
    out_root: Path,
    stem: str,
    config: RecordConfig,
    prove: Prover | None,
    say: Progress,
) -> Recorded:
    rec = await _perform(pool, site, script, config, say)
    warnings = [
        f"{_where(step, action)}: the recorder could not check the assertion "
        f"{action.logical_assertion!r} (no record.expect_text)"
        for step, action in enumerate(script.actions, start=1)
        if action.unchecked_assertion
    ]
    _, missing = requested_files(site, rec.requests)
    if missing:  # an API probe with a fallback, a favicon: the page was recorded as it ran
        warnings.append(
            f"the page asked for {len(missing)} file(s) the site folder does not have (404): "
            f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}; it was recorded as it ran "
            "without them (add them to the site if the page needs them)"
        )
    staging = await anyio.to_thread.run_sync(_stage, site, out_root, config, rec)
    evidence = staging.with_name(staging.name + "-proof")
    try:
        proof = None
        if prove is not None:
            say(f"proving task {rec.record.id}: replaying its reference page with the offline judge")
            started = time.perf_counter()
            proof = _known_missing(await prove(Task(rec.record, staging), pool, evidence=evidence), missing)
            say(f"proof done in {time.perf_counter() - started:.1f} s")
        if proof is not None and proof.problems:
            kept = await anyio.to_thread.run_sync(_keep_failed, staging, evidence, out_root, rec.record.id)
            raise RecordError(
                f"task {rec.record.id} does not prove itself, so it was not written: "
                + "; ".join(proof.problems)
                + f". The recording and the proof's screenshots and replay report are in {kept}"
            )
        folder = await anyio.to_thread.run_sync(_commit, staging, out_root, stem, rec.record)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(staging, ignore_errors=True))
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(evidence, ignore_errors=True))
    return Recorded(folder=folder, warnings=warnings, proof=proof)


def _keep_failed(staging: Path, evidence: Path, out_root: Path, task_id: int) -> Path:
    """Move a task that did not prove itself, and its proof's evidence, to ``.failed/<id>/``."""
    kept = out_root / FAILED_DIR / str(task_id)
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(parents=True)
    shutil.move(staging, kept / "task")
    if evidence.is_dir():
        shutil.move(evidence, kept / "proof")
    return kept


def _where(step: int, action: ScriptAction) -> str:
    return f"step {step} ({action.type} {action.parameters.description!r})"


def determinism_of(site: Path, script: ActionScript, pool: PagePool) -> tuple[int, int]:
    """Seed and clock start of a recording: the script's, else the entry page's seed, the pool's clock."""
    details = script.task_record().recording_details
    seed = (
        details.random_seed
        if details.random_seed is not None
        else html_seed((site / "index.html").read_bytes())
    )
    clock = details.clock_start_ms if details.clock_start_ms is not None else pool.config.determinism.epoch_ms
    return seed, clock


async def _perform(
    pool: PagePool, site: Path, script: ActionScript, config: RecordConfig, say: Progress
) -> _Recording:
    task_record = script.task_record()
    seed, clock = determinism_of(site, script, pool)
    details = task_record.recording_details.model_copy(update={"random_seed": seed, "clock_start_ms": clock})
    task_record = task_record.model_copy(update={"recording_details": details})
    viewport = Viewport.parse(str(task_record.resolution))
    spec = PageSpec(
        page=str(site),
        viewport=viewport,
        random_seed=seed,
        clock_start_ms=clock,
        clock_step_ms=details.clock_step_ms,
    )
    requests: list[str] = []
    try:
        async with pool.page(spec, requests=requests) as tools:
            reel = _Reel(tools, config.capture_interval)
            checkpoints = [await tools.screenshot()]
            await reel.hold(config.hold_initial)
            total = len(script.actions)
            try:
                for step, action in enumerate(script.actions, start=1):
                    started = time.perf_counter()
                    ticked = await _act(tools, reel, action, step, config)
                    if action.record.wait:
                        await anyio.sleep(action.record.wait)
                    # one clock step per action, as the judge's tools take it (see PageTools._settled)
                    after = "scroll" if action.type == "Scroll" else "action"
                    await tools.wait_settled(after, tick=not ticked)
                    await _check_expectation(tools, action, step)
                    if action.visual_evaluation_flag:
                        checkpoints.append(await tools.screenshot())
                    await reel.hold(config.hold_after)
                    say(
                        f"step {step}/{total}: {action.type} {action.parameters.description!r} "
                        f"({time.perf_counter() - started:.1f} s)"
                    )
            except RecordError as exc:
                # a step that failed while files of other origins were refused: those are the
                # likely cause (an icon font missing, a script not run), so say so
                blocked = (await tools.page_state()).blocked_requests
                if any(b.reason == "other origin" for b in blocked):
                    raise _blocked_error(blocked, f"{exc}; ") from exc
                # ... and files the site folder does not have (a script never loaded)
                _, missing = requested_files(site, requests)
                if missing:
                    raise RecordError(
                        f"{exc}; the page also requested {len(missing)} file(s) the site folder does "
                        f"not have (404), a likely cause: {', '.join(missing[:5])}"
                    ) from exc
                raise
            reel.cursor = None
            blocked = (await tools.page_state()).blocked_requests
    except PageFailure as exc:
        raise RecordError(f"the page failed while recording: {exc}") from exc
    if blocked:
        raise _blocked_error(blocked)
    return _Recording(checkpoints, reel, requests, task_record)


def _blocked_error(blocked: list[BlockedRequest], cause: str = "") -> BlockedRequests:
    """The error for requests the sandbox refused, with what to do about other origins."""
    urls = list(dict.fromkeys(b.url for b in blocked))
    names = ", ".join(f"{b.url} ({b.reason})" for b in blocked[:5])
    listing = "\n".join(f"  {u}" for u in urls[:50]) + (
        f"\n  ... and {len(urls) - 50} more" if len(urls) > 50 else ""
    )
    other = {b.url: b.resource_type for b in blocked if b.reason == "other origin"}
    hint = (
        "\nA task must work offline from its own folder. Record again with `--vendor network` "
        "(this machine fetches them) or `--vendor DIR` (a folder holding them: a mirror "
        "<host>/<path>, an npm package or node_modules for npm CDN links, or the files by name), "
        "and they are copied into the task and the page pointed at the copies. The URLs needed:\n" + listing
        if other
        else ""
    )
    message = f"{cause}the sandbox blocked {len(blocked)} request(s) of the site: {names}{hint}"
    return BlockedRequests(message, other)


async def _act(tools: PageTools, reel: _Reel, action: ScriptAction, step: int, config: RecordConfig) -> bool:
    """Perform one scripted action; True when a page tool did it (and so moved a stepped clock on)."""
    where = f"step {step} ({action.type} {action.parameters.description!r})"
    try:
        match action.type:
            case "Click" | "Type":
                index, point = await _locate(tools, action, where)
                reel.cursor = point
                await reel.hold(config.lead_in)
                if action.type == "Type":
                    text = typed_text(action)
                    if text is None:
                        raise RecordError(f"{where}: no text to type (set parameters.text)")
                    await (tools.type(index, text) if index >= 0 else _type_at(tools, point, text))
                elif index >= 0:
                    await tools.click(index)
                else:
                    await _click_at(tools, point)
                return index >= 0
            case "Press":
                key = pressed_key(action)
                if key is None:
                    raise RecordError(f"{where}: no key to press (set parameters.key)")
                await reel.hold(config.lead_in)
                await tools.press(key)
                return True
            case "Scroll":
                await reel.hold(config.lead_in)
                return await _scroll(tools, action, where)
            case _:
                raise RecordError(f"{where}: the recorder performs Click, Type, Press and Scroll only")
    except ToolRetry as exc:
        raise RecordError(f"{where}: {exc}") from exc


async def _locate(tools: PageTools, action: ScriptAction, where: str) -> tuple[int, tuple[float, float]]:
    hints = action.record
    if hints.selector is None:
        assert hints.x is not None and hints.y is not None
        return -1, (hints.x, hints.y)
    selector = json.dumps(hints.selector)
    center = await tools.tab.evaluate(_CENTER_JS % selector)
    if isinstance(center, dict) and center.get("hidden"):  # pyright: ignore[reportUnknownMemberType]
        # shown on hover: move the mouse over its row first, as the person recorded does
        x, y = float(center["x"]), float(center["y"])  # pyright: ignore[reportUnknownArgumentType]
        await tools.tab.mouse("mouseMoved", x, y)
        await tools.wait_settled("action")
        center = await tools.tab.evaluate(_CENTER_JS % selector)
    if not isinstance(center, dict):
        raise RecordError(f"{where}: selector {hints.selector!r} matches nothing on the page")
    point = (float(center["x"]), float(center["y"]))  # pyright: ignore[reportUnknownArgumentType]
    await tools.observe()
    index = int(await tools.tab.evaluate(_INDEX_OF_JS % selector))
    return index, point


async def _click_at(tools: PageTools, point: tuple[float, float]) -> None:
    x, y = point
    await tools.tab.mouse("mouseMoved", x, y)
    await tools.tab.mouse("mousePressed", x, y, button="left", clicks=1)
    await tools.tab.mouse("mouseReleased", x, y, button="left", clicks=1)


async def _type_at(tools: PageTools, point: tuple[float, float], text: str) -> None:
    await _click_at(tools, point)
    await tools.tab.insert_text(text)


async def _scroll(tools: PageTools, action: ScriptAction, where: str) -> bool:
    direction = scroll_direction(action)
    if direction is None:
        raise RecordError(f"{where}: scroll direction {action.parameters.direction!r} is not up or down")
    amount = tools.tab.viewport.height / 2
    if action.record.selector is not None:
        selector = json.dumps(action.record.selector)
        center = await tools.tab.evaluate(_CENTER_JS % selector)
        if not isinstance(center, dict):
            raise RecordError(f"{where}: selector {action.record.selector!r} matches nothing on the page")
        position = _SCROLL_TOP_JS % selector
        before = float(await tools.tab.evaluate(position))
        x, y = float(center["x"]), float(center["y"])  # pyright: ignore[reportUnknownArgumentType]
        await tools.tab.wheel(x, y, 0.0, amount if direction == "down" else -amount)
        await anyio.sleep(0.2)
        moved = abs(float(await tools.tab.evaluate(position)) - before)
        if moved <= 5:
            raise RecordError(f"{where}: scrolling {action.record.selector!r} moved it {moved:g} px")
        return False
    result = await tools.scroll(direction, region=scroll_region(action))  # as the judge scrolls it
    if result.moved_px <= 5:
        raise RecordError(f"{where}: the page did not scroll (moved {result.moved_px:g} px)")
    return True


async def _check_expectation(tools: PageTools, action: ScriptAction, step: int) -> None:
    expected = action.record.expect_text
    if expected and not await tools.tab.evaluate(_HAS_TEXT_JS % json.dumps(expected)):
        shown = await tools.tab.evaluate(_PAGE_TEXT_JS)
        shown = " ".join(str(shown or "").split())
        shown = shown if len(shown) <= 300 else shown[:300] + "..."
        raise RecordError(
            f"step {step} ({action.type} {action.parameters.description!r}): "
            f"expected text {expected!r} is not visible after the action; the page reads: {shown!r}"
        )


_FAILED_URL = re.compile(r"\((https?://[^)\s]+)\)\s*$")


def _known_missing(proof: OracleProof, missing: list[str]) -> OracleProof:
    """``proof`` less the failed requests for files the site itself lacked while recording (the
    warning names them): the reference failed them the same way, so they say nothing of the bundle."""
    if not missing:
        return proof
    known = set(missing)

    def lacked(failed: str) -> bool:
        m = _FAILED_URL.search(failed)
        return m is not None and urlsplit(m.group(1)).path in known

    expected = [f for f in proof.failed_requests if lacked(f)]
    if not expected:
        return proof
    dropped = {f"request failed: {f}" for f in expected}
    return proof.model_copy(
        update={
            "failed_requests": [f for f in proof.failed_requests if f not in expected],
            "problems": [p for p in proof.problems if p not in dropped],
        }
    )


def _stage(site: Path, out_root: Path, config: RecordConfig, rec: _Recording) -> Path:
    """Write the whole task into a staging folder beside its final place; returns the folder."""
    requested, _ = requested_files(site, rec.requests)
    bundle = [rel for rel in bundle_files(site, requested) if Path(rel).name != TASK_RECORD]
    mapping = anonymise(asset_paths(site, bundle))
    out_root.mkdir(parents=True, exist_ok=True)
    staging = out_root / f".staging-{rec.record.id}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / ASSETS_DIR).mkdir(parents=True)
        for rel, anon in mapping.items():
            shutil.copyfile(site / rel, staging / ASSETS_DIR / anon)
        write_contact_sheets([staging / ASSETS_DIR / a for a in mapping.values()], staging / SHEETS_DIR)
        (staging / CHECKPOINTS_DIR).mkdir()
        for k, png in enumerate(rec.checkpoints):
            (staging / CHECKPOINTS_DIR / f"step_{k}.png").write_bytes(png)
        write_video(rec.reel.frames(config.fps), staging / VIDEO_NAME, fps=config.fps, crf=config.crf)
        for rel in bundle:
            target = staging / REFERENCE_DIR / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(site / rel, target)
        _atomic_write(staging / ASSET_MAP, json.dumps(mapping, indent=2) + "\n")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


ASSET_MAP = ".asset_map.json"
"""Staged copy of the asset map (moved to ``asset_maps/<id>.json`` on commit)."""


def _commit(staging: Path, out_root: Path, stem: str, record: TaskRecord) -> Path:
    """Move a staged task into place and write its asset map and jsonl record."""
    final = out_root / stem / str(record.id)
    final.parent.mkdir(parents=True, exist_ok=True)
    mapping = (staging / ASSET_MAP).read_text(encoding="utf-8")
    (staging / ASSET_MAP).unlink()
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)
    maps = out_root / "asset_maps"
    maps.mkdir(exist_ok=True)
    _atomic_write(maps / f"{record.id}.json", mapping)
    upsert_record(out_root / f"{stem}.jsonl", record.model_dump(mode="json", exclude_none=True))
    return final


def upsert_record(jsonl: Path, record: dict[str, Any]) -> None:
    """Replace the line with the same id in ``jsonl`` in place (or append one), atomically."""
    lines: list[str] = []
    if jsonl.is_file():
        lines = [ln for ln in jsonl.read_text(encoding="utf-8").splitlines() if ln.strip()]
    new = json.dumps(record, ensure_ascii=False)
    for i, line in enumerate(lines):
        try:
            same = json.loads(line).get("id") == record["id"]
        except (json.JSONDecodeError, AttributeError):
            same = False
        if same:
            lines[i] = new
            break
    else:
        lines.append(new)
    _atomic_write(jsonl, "\n".join(lines) + "\n")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
