"""Checks that a task set is usable, reporting every problem with its task, field and cause."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from iwr_bench.dataset.frames import VideoError, probe_video
from iwr_bench.dataset.layout import (
    ASSETS_DIR,
    CHECKPOINT_NAME,
    CHECKPOINTS_DIR,
    IMAGE_SUFFIXES,
    METADATA,
    SHEET_PREFIX,
    SHEETS_DIR,
    SHEETS_MANIFEST,
    VIDEO_NAME,
    Alignment,
    Task,
    TaskSet,
    is_regular,
)
from iwr_bench.dataset.models import ENVIRONMENTS, pressed_key, scroll_direction, typed_text
from iwr_bench.dataset.problems import Problem, Severity

Check = Callable[[Task], Iterator[tuple[Severity, str, str]]]


def validate(task_set: TaskSet, *, check_media: bool = True) -> list[Problem]:
    """Every problem in a task set: parse errors first, then per task in file order.

    Args:
        task_set: What :func:`~iwr_bench.dataset.layout.load_tasks` returned.
        check_media: Decode videos and images (slower, but catches unreadable files).
    """
    problems = list(task_set.problems)  # duplicate ids among them (the loader keeps the first)
    for task in task_set.tasks:
        problems.extend(validate_task(task, check_media=check_media))
    return problems


MAX_CHECKPOINT_PIXELS = 8192 * 8192
"""Largest checkpoint read (64 Mpx; a 1280x720 screenshot is 0.9 Mpx): a bigger one is refused
before it is decoded, as a decompression bomb would be."""


def read_otherwise_officially(task: Task) -> list[tuple[str, str]]:
    """(field, what differs) for every value of ``task``'s record that the official scripts read
    otherwise than this project's loader: a type spelled in another case (we read it, they fail the
    step), a flag given as a string (``"false"`` is set for them), a resolution with a capital
    ``X`` (they split on ``x`` and cannot read the task at all)."""
    found: list[tuple[str, str]] = []
    resolution = task.record.recording_details.resolution
    if resolution is not None and not _officially_readable(resolution):
        found.append(
            (
                "recording_details.resolution",
                f"{resolution!r}: the official scripts split it on a lower-case 'x' and cannot read it",
            )
        )
    for i, action in enumerate(task.record.action_sequence):
        found.extend((f"action_sequence[{i}]", note) for note in action.read_otherwise_officially)
    return found


def _officially_readable(resolution: str) -> bool:
    parts = resolution.split("x")
    if len(parts) != 2:
        return False
    try:
        return all(int(part) > 0 for part in parts)
    except ValueError:
        return False


def data_faults(task: Task, *, needs_video: bool, official: bool = False) -> list[Problem]:
    """What in a task's files would make judging it charge a model for the data's fault: a task
    folder that cannot be opened (missing, a symlink loop), a missing checkpoint folder or initial
    checkpoint, a checkpoint that is not a regular file, not a readable image or absurdly large,
    and, when ``needs_video`` (generation), a missing or non-regular video.

    Under the official protocol (``official``) a resolution the official scripts cannot read is a
    fault too: they stop on that task.

    Cheap (image headers and checksums, no video decoding): run before any model is called.
    """
    try:
        folder_ok = task.folder.is_dir() and task.folder.resolve(strict=True).is_dir()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on older Pythons
        return [_problem(task, "error", "folder", f"task folder {task.folder} cannot be opened: {exc}")]
    if not folder_ok:
        return [_problem(task, "error", "folder", f"task folder {task.folder} does not exist")]
    faults: list[Problem] = []
    if official:
        faults += [
            _problem(task, "error", field, note)
            for field, note in read_otherwise_officially(task)
            if field == "recording_details.resolution"
        ]
    if needs_video and not is_regular(task.video):
        faults.append(_problem(task, "error", VIDEO_NAME, "the video is missing or not a regular file"))
    if not task.checkpoints_dir.is_dir():
        faults.append(_problem(task, "error", CHECKPOINTS_DIR, "checkpoints folder is missing"))
        return faults
    odd = _irregular_checkpoints(task)
    if odd:
        faults.append(_problem(task, "error", CHECKPOINTS_DIR, f"not regular files: {', '.join(odd)}"))
    steps = task.checkpoints
    if 0 not in steps and not odd:
        faults.append(
            _problem(task, "error", f"{CHECKPOINTS_DIR}/step_0.png", "initial checkpoint is missing")
        )
    for step, path in steps.items():
        dims = _image_size(path)
        if isinstance(dims, str):
            faults.append(
                _problem(task, "error", f"{CHECKPOINTS_DIR}/{path.name}", f"checkpoint step {step} {dims}")
            )
    return faults


def _irregular_checkpoints(task: Task) -> list[str]:
    """Names of checkpoints that are not regular files (a FIFO, a device, a dangling link)."""
    listed = [p for p in task.checkpoints_dir.iterdir() if CHECKPOINT_NAME.match(p.name)]
    return sorted(p.name for p in listed if not is_regular(p))


def validate_task(task: Task, *, check_media: bool = True) -> list[Problem]:
    """Every problem with one task."""
    if not task.folder.is_dir():
        return [_problem(task, "error", "folder", f"task folder {task.folder} does not exist")]
    checks: list[Check] = [
        _check_recording,
        _check_actions,
        _check_checkpoints,
        _check_assets,
        _check_unknown_fields,
        _check_official_reading,
    ]
    if check_media:
        checks[2:2] = [_check_video, _check_checkpoint_images]
    return [_problem(task, sev, field, msg) for check in checks for sev, field, msg in check(task)]


def _problem(task: Task, severity: Severity, field: str, message: str) -> Problem:
    return Problem(severity=severity, task_id=task.id, line=task.line, field=field, message=message)


def _check_actions(task: Task) -> Iterator[tuple[Severity, str, str]]:
    actions = task.record.action_sequence
    if not actions:
        yield "warning", "action_sequence", "the task has no actions (kept; it scores IFS 0, as officially)"
    for i, action in enumerate(actions):
        where = f"action_sequence[{i}]"
        if not action.known_type:
            yield (
                "warning",
                f"{where}.type",
                f"unknown action type {action.type!r} (kept, as the official scripts do; "
                "replay fails at this action)",
            )
        if not action.parameters.description.strip():
            yield "warning", f"{where}.parameters.description", _empty_description(action.type)
        match action.type:
            case "Type" if typed_text(action) is None:
                yield (
                    "warning",
                    f"{where}.parameters",
                    "Type action gives no text (no 'text' and nothing quoted)",
                )
            case "Press" if pressed_key(action) is None:
                yield "warning", f"{where}.parameters.key", "Press action names no key the judge can send"
            case "Scroll" if scroll_direction(action) is None:
                given = action.parameters.direction
                yield (
                    "warning",
                    f"{where}.parameters.direction",
                    f"direction {given!r} is neither 'up' nor 'down' (scrolls down, as the official judge "
                    "always does)",
                )
            case _:
                pass


def _check_official_reading(task: Task) -> Iterator[tuple[Severity, str, str]]:
    for field, note in read_otherwise_officially(task):
        yield "warning", field, note


def _empty_description(kind: str) -> str:
    if kind in ("Scroll", "Press"):
        return f"empty description on a {kind} (the official scripts never read it there)"
    return f"empty description on a {kind}: the judge cannot ground it, so replay fails at this action"


def _check_recording(task: Task) -> Iterator[tuple[Severity, str, str]]:
    details = task.record.recording_details
    if details.environment not in ENVIRONMENTS:
        yield (
            "warning",
            "recording_details.environment",
            f"environment {details.environment!r} is neither desktop nor mobile (kept as given; "
            "the report's device breakdown shows it as its own group)",
        )
    text, source = task.resolution_source
    if source != "record":
        where = f"from {METADATA}" if source == METADATA else "the official default"
        yield (
            "warning",
            "recording_details.resolution",
            f"no resolution in the record; using {text} ({where})",
        )


def _check_video(task: Task) -> Iterator[tuple[Severity, str, str]]:
    try:
        info = probe_video(task.video)
    except VideoError as exc:
        yield "error", VIDEO_NAME, str(exc)
        return
    if info.duration <= 0:
        yield "error", VIDEO_NAME, "video has no duration"


def _check_checkpoints(task: Task) -> Iterator[tuple[Severity, str, str]]:
    if not task.checkpoints_dir.is_dir():
        yield "error", CHECKPOINTS_DIR, "checkpoints folder is missing"
        return
    odd = _irregular_checkpoints(task)
    if odd:
        yield "error", CHECKPOINTS_DIR, f"not regular files: {', '.join(odd)}"
        return
    steps = task.checkpoints
    if 0 not in steps:
        yield "error", f"{CHECKPOINTS_DIR}/step_0.png", "initial-state checkpoint is missing"
    gaps = sorted(set(range(max(steps, default=-1) + 1)) - set(steps))
    if gaps:
        yield (
            "error",
            CHECKPOINTS_DIR,
            f"checkpoint numbering has gaps: missing step {', '.join(map(str, gaps))}",
        )
    stray = [
        p.name
        for p in task.checkpoints_dir.iterdir()
        if p.is_file() and not p.name.startswith(".") and p not in steps.values()
    ]
    if stray:
        yield (
            "warning",
            CHECKPOINTS_DIR,
            f"files not named step_<k>.png are ignored: {', '.join(sorted(stray))}",
        )
    n_actions = len(task.record.action_sequence)
    n_flagged = len(task.record.flagged_indices)
    if task.alignment is Alignment.flagged and len(steps) > 1 + n_flagged:
        yield (
            "warning",
            CHECKPOINTS_DIR,
            f"{len(steps)} checkpoints for 1 + {n_flagged} flagged actions: the last "
            f"{len(steps) - 1 - n_flagged} go unused (as the official scripts leave them)",
        )
    if task.alignment is Alignment.invalid:
        yield (
            "error",
            CHECKPOINTS_DIR,
            f"{len(steps)} checkpoints fit neither 1 + {n_flagged} flagged actions "
            f"nor 1 + {n_actions} actions",
        )


def _check_checkpoint_images(task: Task) -> Iterator[tuple[Severity, str, str]]:
    size = task.resolution
    for step, path in task.checkpoints.items():
        field = f"{CHECKPOINTS_DIR}/{path.name}"
        dims = _image_size(path)
        if isinstance(dims, str):
            yield "error", field, f"checkpoint step {step} {dims}"
        elif dims != (size.width, size.height):
            yield "warning", field, f"image is {dims[0]}x{dims[1]} but the task resolution is {size}"


def _check_assets(task: Task) -> Iterator[tuple[Severity, str, str]]:
    assets = task.asset_files
    if not task.assets_dir.is_dir():
        yield "warning", ASSETS_DIR, "assets folder is missing"
    if assets and not task.sheets_dir.is_dir():
        yield "error", SHEETS_DIR, f"{len(assets)} assets but no stitched_assets folder to show them"
    elif assets and not task.sheet_files:
        yield (
            "error",
            SHEETS_DIR,
            f"{len(assets)} assets but no contact sheet (files named {SHEET_PREFIX}*) to show them",
        )
    yield from _check_stray_sheets(task)
    for path in assets:
        if path.suffix.lower() in IMAGE_SUFFIXES - {".svg"} and isinstance(_image_size(path), str):
            yield "warning", f"{ASSETS_DIR}/{path.name}", "asset is not a readable image"
    yield from _check_asset_references(task)


def _check_stray_sheets(task: Task) -> Iterator[tuple[Severity, str, str]]:
    """Images in stitched_assets/ that the official rule does not send (their names do not say sheet)."""
    if not task.sheets_dir.is_dir():
        return
    sheets = set(task.sheet_files)
    for path in sorted(task.sheets_dir.iterdir()):
        if path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES and path not in sheets:
            yield (
                "warning",
                f"{SHEETS_DIR}/{path.name}",
                f"not a contact sheet by the official rule (name does not start with {SHEET_PREFIX}); "
                "never sent to the model",
            )


def _check_asset_references(task: Task) -> Iterator[tuple[Severity, str, str]]:
    """Assets that no contact sheet lists and the reference page does not use."""
    manifest_field = f"{SHEETS_DIR}/{SHEETS_MANIFEST}"
    listed: set[str] | None = None
    try:
        listed = _sheet_listing(task)
    except ValueError as exc:
        yield "error", manifest_field, str(exc)
    page = task.reference_page
    if listed is None and page is None:
        return  # nothing to cross-check against (the official layout ships neither)
    names = {p.name for p in task.asset_files}
    for missing in sorted((listed or set()) - names):
        yield "error", manifest_field, f"lists {missing}, which is not in assets/"
    html = page.read_text(encoding="utf-8", errors="replace") if page else ""
    for name in sorted(names):
        if (listed is None or name not in listed) and name not in html:
            yield "warning", f"{ASSETS_DIR}/{name}", "asset is referenced by nothing (no sheet, no page)"


def _sheet_listing(task: Task) -> set[str] | None:
    """Names listed by ``sheets.json`` (sheet file -> asset names), or None when there is none.

    Raises:
        ValueError: when the manifest exists but is not of that shape.
    """
    manifest = task.sheets_dir / SHEETS_MANIFEST
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable sheet manifest: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):  # pyright: ignore[reportUnknownVariableType]
        raise ValueError("sheet manifest must map each sheet file to a list of asset names")
    return {str(n) for names in data.values() for n in names}  # pyright: ignore[reportUnknownVariableType]


def _check_unknown_fields(task: Task) -> Iterator[tuple[Severity, str, str]]:
    for path in task.record.unknown_fields():
        yield "warning", path, "field is not part of the IWR-Bench format (kept, but unused)"


def _image_size(path: Path) -> tuple[int, int] | str:
    """The image's size, or what is wrong with it (never blocks on a FIFO, never decodes a bomb)."""
    if not is_regular(path):
        return "is not a regular file"
    try:
        with Image.open(path) as img:
            width, height = img.size
            if width * height > MAX_CHECKPOINT_PIXELS:
                limit = f"{MAX_CHECKPOINT_PIXELS:,} pixels"
                return f"is {width}x{height}, larger than any screenshot (limit {limit})"
            img.verify()  # every chunk read and its checksum checked: a cut file fails here
            return width, height
    except Image.DecompressionBombError:
        return "is too large to decode"
    except UnidentifiedImageError:
        return "is not a readable image"
    except (OSError, SyntaxError, ValueError) as exc:  # cut short, a bad checksum
        return f"is not a readable image ({exc})"
