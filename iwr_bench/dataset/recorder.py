"""``iwr record``: turn a reference site plus an action script into a task in the official layout.

The site is served on 127.0.0.1 and driven in the same sandboxed Chromium the judges use, through
the same tools (elements found by the recording selector are acted on by their ``observe``
index). While it runs, the viewport is screenshotted about ten times a second with a visible
pause around every action; the frames become a constant-rate H.264 video in which each capture
is held until the next. Checkpoints are the settled screenshots. Everything is written to a
staging folder first and moved into place only when the whole script succeeded.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import anyio.to_thread
from PIL import Image, ImageDraw
from pydantic import BaseModel, Field

from iwr_bench.dataset.layout import (
    ASSETS_DIR,
    CHECKPOINTS_DIR,
    REFERENCE_DIR,
    SHEETS_DIR,
    TASK_RECORD,
    VIDEO_NAME,
)
from iwr_bench.dataset.media import write_contact_sheets, write_video
from iwr_bench.dataset.models import pressed_key, scroll_direction, typed_text
from iwr_bench.dataset.script import ActionScript, ScriptAction
from iwr_bench.errors import UserError
from iwr_bench.tools.errors import PageFailure, ToolRetry
from iwr_bench.tools.models import PageSpec, SettleConfig, Viewport
from iwr_bench.tools.pool import PagePool, PoolConfig
from iwr_bench.tools.tools import PageTools

PLACEHOLDER = "__PLACEHOLDER_ASSETS_BASE_DIR__"
ASSET_SUFFIXES = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".webp",
        ".svg",
        ".bmp",
        ".ico",
        ".avif",
        ".mp4",
        ".webm",
        ".mp3",
        ".ogg",
    }
)
_TEXT_SUFFIXES = frozenset({".html", ".htm", ".css", ".js", ".json", ".svg"})

_LOADED_ASSETS_JS = r"""
(() => {
  const out = [];
  const add = (u) => { if (u && !u.startsWith('data:')) out.push(u); };
  performance.getEntriesByType('resource').forEach((e) => add(e.name));
  document.querySelectorAll('img, video, source, audio').forEach((el) => add(el.currentSrc || el.src));
  for (const el of document.querySelectorAll('*')) {
    const bg = getComputedStyle(el).backgroundImage;
    if (!bg || bg === 'none') continue;
    for (const m of bg.matchAll(/url\("?([^")]+)"?\)/g)) add(new URL(m[1], location.href).href);
  }
  return out;
})()
"""

_INDEX_OF_JS = (
    "(() => { const el = document.querySelector(%s); return el ? window.__iwr__.els.indexOf(el) : -2; })()"
)
_CENTER_JS = r"""
(() => {
  const el = document.querySelector(%s);
  if (!el) return null;
  let r = el.getBoundingClientRect();
  if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) {
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    r = el.getBoundingClientRect();
  }
  return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
})()
"""
_SCROLL_TOP_JS = "document.querySelector(%s).scrollTop"
_HAS_TEXT_JS = "document.body ? document.body.innerText.includes(%s) : false"


class RecordError(UserError):
    """The script could not be performed; names the step (1-based) and the cause."""


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


@dataclass
class _Recording:
    checkpoints: list[bytes]
    reel: _Reel
    loaded: list[str]
    origin: str


async def record(
    site: Path,
    script: ActionScript,
    out_root: Path,
    *,
    stem: str = "data",
    config: RecordConfig | None = None,
    pool: PagePool | None = None,
) -> Path:
    """Record ``script`` on ``site`` and write the task under ``out_root/<stem>/<id>``.

    Returns the task folder. ``out_root/<stem>.jsonl`` gets the record (replacing one with the
    same id); ``out_root/asset_maps/<id>.json`` maps original asset paths to anonymised names.

    Raises:
        RecordError: when a step cannot be performed or its expected text is absent.
        UserError: when the site has no index.html.
    """
    config = config or RecordConfig()
    site = site.resolve()
    if not (site / "index.html").is_file():
        raise UserError(f"{site} has no index.html")
    viewport = Viewport.parse(str(script.task_record().resolution))
    if pool is None:
        async with PagePool(PoolConfig(size=1, settle=config.settle)) as own:
            rec = await _perform(own, site, script, viewport, config)
    else:
        rec = await _perform(pool, site, script, viewport, config)
    return await anyio.to_thread.run_sync(_write_task, site, script, out_root, stem, config, rec)


async def _perform(
    pool: PagePool, site: Path, script: ActionScript, viewport: Viewport, config: RecordConfig
) -> _Recording:
    spec = PageSpec(page=str(site), viewport=viewport)
    try:
        async with pool.page(spec) as tools:
            reel = _Reel(tools, config.capture_interval)
            origin = str(await tools.tab.evaluate("location.origin"))
            loaded: list[str] = list(await tools.tab.evaluate(_LOADED_ASSETS_JS))
            checkpoints = [await tools.screenshot()]
            await reel.hold(config.hold_initial)
            for step, action in enumerate(script.actions, start=1):
                await _act(tools, reel, action, step, config)
                if action.record.wait:
                    await anyio.sleep(action.record.wait)
                await tools.wait_settled("scroll" if action.type == "Scroll" else "action")
                await _check_expectation(tools, action, step)
                if action.visual_evaluation_flag:
                    checkpoints.append(await tools.screenshot())
                loaded.extend(await tools.tab.evaluate(_LOADED_ASSETS_JS))
                await reel.hold(config.hold_after)
            reel.cursor = None
            return _Recording(checkpoints, reel, loaded, origin)
    except PageFailure as exc:
        raise RecordError(f"the page failed while recording: {exc}") from exc


async def _act(tools: PageTools, reel: _Reel, action: ScriptAction, step: int, config: RecordConfig) -> None:
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
            case "Press":
                key = pressed_key(action)
                if key is None:
                    raise RecordError(f"{where}: no key to press (set parameters.key)")
                await reel.hold(config.lead_in)
                await tools.press(key)
            case "Scroll":
                await reel.hold(config.lead_in)
                await _scroll(tools, action, where)
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


async def _scroll(tools: PageTools, action: ScriptAction, where: str) -> None:
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
        return
    result = await tools.scroll(direction)
    if result.moved_px <= 5:
        raise RecordError(f"{where}: the page did not scroll (moved {result.moved_px:g} px)")


async def _check_expectation(tools: PageTools, action: ScriptAction, step: int) -> None:
    expected = action.record.expect_text
    if expected and not await tools.tab.evaluate(_HAS_TEXT_JS % json.dumps(expected)):
        raise RecordError(
            f"step {step} ({action.type} {action.parameters.description!r}): "
            f"expected text {expected!r} is not visible after the action"
        )


def _asset_paths(site: Path, loaded: list[str], origin: str) -> list[str]:
    """Site-relative paths of asset files, in first-load order, then any others the site's files name."""
    seen: dict[str, None] = {}
    for url in loaded:
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != origin:
            continue
        rel = unquote(parts.path).lstrip("/")
        path = site / rel
        if path.suffix.lower() in ASSET_SUFFIXES and path.is_file() and path.resolve().is_relative_to(site):
            seen.setdefault(rel, None)
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in _text_files(site))
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site).as_posix()
        if path.is_file() and path.suffix.lower() in ASSET_SUFFIXES and rel in text:
            seen.setdefault(rel, None)
    return list(seen)


def _check_literal_references(site: Path, mapping: dict[str, str]) -> None:
    """Every asset must be named by its path somewhere, or the reference page cannot be rewritten."""
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in _text_files(site))
    hidden = [rel for rel in mapping if rel not in text]
    if hidden:
        raise RecordError(
            f"the page loads {', '.join(hidden)} but no file of the site names that path literally "
            "(it is built at run time); write the full path in the source so it can be anonymised"
        )


def _text_files(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*") if p.is_file() and p.suffix.lower() in _TEXT_SUFFIXES - {".svg"})


def anonymise(paths: list[str]) -> dict[str, str]:
    """Map site-relative asset paths to ``001.png``, ``002.svg``, ... in the given order."""
    return {rel: f"{n:03d}{Path(rel).suffix.lower()}" for n, rel in enumerate(paths, start=1)}


def rewrite_references(text: str, mapping: dict[str, str], base: str = PLACEHOLDER) -> str:
    """Replace every reference to an original asset path with ``<base>/<anonymised name>``."""
    for rel in sorted(mapping, key=len, reverse=True):
        new = f"{base}/{mapping[rel]}"
        for old in (f"./{rel}", rel):
            text = text.replace(old, new)
    return text


def _write_task(
    site: Path, script: ActionScript, out_root: Path, stem: str, config: RecordConfig, rec: _Recording
) -> Path:
    record = script.task_record()
    out_root.mkdir(parents=True, exist_ok=True)
    staging = out_root / f".staging-{record.id}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        mapping = anonymise(_asset_paths(site, rec.loaded, rec.origin))
        _check_literal_references(site, mapping)
        (staging / ASSETS_DIR).mkdir(parents=True)
        for rel, anon in mapping.items():
            shutil.copyfile(site / rel, staging / ASSETS_DIR / anon)
        write_contact_sheets([staging / ASSETS_DIR / a for a in mapping.values()], staging / SHEETS_DIR)
        (staging / CHECKPOINTS_DIR).mkdir()
        for k, png in enumerate(rec.checkpoints):
            (staging / CHECKPOINTS_DIR / f"step_{k}.png").write_bytes(png)
        write_video(rec.reel.frames(config.fps), staging / VIDEO_NAME, fps=config.fps, crf=config.crf)
        _write_reference(site, staging / REFERENCE_DIR, mapping)
        final = out_root / stem / str(record.id)
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    maps = out_root / "asset_maps"
    maps.mkdir(exist_ok=True)
    _atomic_write(maps / f"{record.id}.json", json.dumps(mapping, indent=2) + "\n")
    upsert_record(out_root / f"{stem}.jsonl", record.model_dump(mode="json", exclude_none=True))
    return final


def _write_reference(site: Path, dest: Path, mapping: dict[str, str]) -> None:
    """Copy the site minus its media files, with asset references rewritten to the placeholder prefix."""
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site).as_posix()
        if not path.is_file() or path.suffix.lower() in ASSET_SUFFIXES or path.name == TASK_RECORD:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() in _TEXT_SUFFIXES - {".svg"}:
            target.write_text(rewrite_references(path.read_text(encoding="utf-8"), mapping), encoding="utf-8")
        else:
            shutil.copyfile(path, target)


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
