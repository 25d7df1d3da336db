"""The official on-disk layout of IWR-Bench tasks, and the loader that reads it.

```
<root>/data.jsonl                  one task record per line
<root>/data/<id>/video.mp4         screen recording
<root>/data/<id>/assets/           anonymised asset files
<root>/data/<id>/stitched_assets/  contact sheets of the assets
<root>/data/<id>/checkpoints/step_<k>.png
```
The folder holding the task folders is named after the jsonl file's stem. Two optional
extensions of our own live in a task folder and are ignored by the official tools:
``reference/index.html`` (the page that was recorded, used by the ``oracle`` baseline) and
``stitched_assets/sheets.json`` (which asset names each sheet shows).
"""

from __future__ import annotations

import json
import re
import stat
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from iwr_bench.dataset.models import DEFAULT_RESOLUTION, MAX_TASK_ID, Resolution, TaskRecord
from iwr_bench.dataset.problems import Problem
from iwr_bench.errors import UserError

VIDEO_NAME = "video.mp4"
ASSETS_DIR = "assets"
SHEETS_DIR = "stitched_assets"
CHECKPOINTS_DIR = "checkpoints"
REFERENCE_DIR = "reference"
SHEETS_MANIFEST = "sheets.json"
SHEET_PREFIX = "stitched_image"
"""Contact sheets are the files of ``stitched_assets/`` whose names start with this (official rule)."""
TASK_RECORD = "task.json"
METADATA = "metadata.json"
"""A task folder's optional metadata file; the official generator reads the resolution from it."""

CHECKPOINT_NAME = re.compile(r"^step_(\d+)\.png$")
"""A checkpoint file's name; the group is its step."""
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".ico", ".avif"})


class Alignment(StrEnum):
    """How checkpoint images line up with actions (protocol.md section 1)."""

    flagged = "flagged"
    """step_k is the state after the k-th visually flagged action (the official numbering)."""
    every_action = "every_action"
    """step_k is the state after the k-th action, flagged or not."""
    invalid = "invalid"
    """The checkpoint count fits neither numbering."""


class Task:
    """A task record with the paths of its files resolved."""

    def __init__(self, record: TaskRecord, folder: Path, line: int | None = None) -> None:
        self.record = record
        self.folder = folder
        self.line = line

    def __repr__(self) -> str:
        return f"Task(id={self.id}, folder={str(self.folder)!r})"

    @property
    def id(self) -> int:
        """Task id."""
        return self.record.id

    @cached_property
    def resolution(self) -> Resolution:
        """Viewport size to judge at: the record's, else ``metadata.json``'s, else 1920x1080.

        The official generator reads ``<task>/metadata.json`` (``recording_details.resolution``)
        when a record has none; so does this.
        """
        return Resolution.parse(self.resolution_source[0])

    @cached_property
    def resolution_source(self) -> tuple[str, str]:
        """The resolution text and where it came from (``record``, ``metadata.json`` or ``default``)."""
        given = self.record.recording_details.resolution
        if given:
            return given, "record"
        from_meta = _metadata_resolution(self.folder / METADATA)
        if from_meta is not None:
            return from_meta, METADATA
        return DEFAULT_RESOLUTION, "default"

    @property
    def video(self) -> Path:
        """Path of the screen recording."""
        return self.folder / VIDEO_NAME

    @property
    def assets_dir(self) -> Path:
        """Folder of anonymised asset files."""
        return self.folder / ASSETS_DIR

    @property
    def sheets_dir(self) -> Path:
        """Folder of stitched asset contact sheets."""
        return self.folder / SHEETS_DIR

    @property
    def checkpoints_dir(self) -> Path:
        """Folder of ground-truth screenshots."""
        return self.folder / CHECKPOINTS_DIR

    @property
    def reference_page(self) -> Path | None:
        """The recorded page (our extension), when the task ships it."""
        page = self.folder / REFERENCE_DIR / "index.html"
        return page if page.is_file() else None

    @cached_property
    def asset_files(self) -> list[Path]:
        """Asset files, sorted by name."""
        return _files(self.assets_dir)

    @cached_property
    def sheet_files(self) -> list[Path]:
        """Contact sheets, as the official generator picks them: the files of ``stitched_assets/``
        whose names start with ``stitched_image``, in plain sorted order (``_10`` before ``_2``).

        This is the order they are shown to the model; other files there are not sheets.
        """
        if not self.sheets_dir.is_dir():
            return []
        found = [p for p in self.sheets_dir.iterdir() if p.is_file() and p.name.startswith(SHEET_PREFIX)]
        return sorted(found, key=lambda p: p.name)

    @cached_property
    def checkpoints(self) -> dict[int, Path]:
        """Checkpoint images by step number."""
        found: dict[int, Path] = {}
        for p in _files(self.checkpoints_dir):
            m = CHECKPOINT_NAME.match(p.name)
            if m:
                found[int(m.group(1))] = p
        return dict(sorted(found.items()))

    @property
    def alignment(self) -> Alignment:
        """Which numbering the checkpoints follow, detected from their count."""
        n = len(self.checkpoints)
        actions = self.record.action_sequence
        if n == 1 + len(self.record.flagged_indices):
            return Alignment.flagged
        if n == 1 + len(actions):
            return Alignment.every_action
        if n > 1 + len(self.record.flagged_indices):  # more than needed: the rest go unused, as
            return Alignment.flagged  # the official scripts leave them (the validator warns)
        return Alignment.invalid

    def checkpoint_after(self, action_index: int) -> Path | None:
        """Checkpoint for the state after action ``action_index`` (0-based), if it is scored.

        Only visually flagged actions are scored, whatever the numbering of the files.
        """
        actions = self.record.action_sequence
        if not actions[action_index].visual_evaluation_flag:
            return None
        match self.alignment:
            case Alignment.flagged:
                step = self.record.flagged_indices.index(action_index) + 1
            case Alignment.every_action:
                step = action_index + 1
            case Alignment.invalid:
                return None
        return self.checkpoints.get(step)

    @property
    def initial_checkpoint(self) -> Path | None:
        """``step_0.png``: the page before any action."""
        return self.checkpoints.get(0)


def _metadata_resolution(path: Path) -> str | None:
    """``recording_details.resolution`` of a ``metadata.json``, when it is there and well formed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    details = data.get("recording_details") if isinstance(data, dict) else None
    value = details.get("resolution") if isinstance(details, dict) else None
    if not isinstance(value, str):
        return None
    try:
        Resolution.parse(value)
    except ValueError:
        return None
    return value


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")), key=_natural)


def _natural(p: Path) -> tuple[object, ...]:
    parts = re.split(r"(\d+)", p.name)
    return tuple(int(s) if s.isdigit() else s.lower() for s in parts)


@dataclass
class TaskSet:
    """What the loader found: the tasks it could read and the problems with the rest."""

    source: Path
    """The jsonl file or task record the tasks came from."""
    tasks: list[Task]
    """Tasks parsed without error, in file order."""
    problems: list[Problem]
    """Lines or records that could not be read."""

    def by_id(self, task_id: int) -> Task:
        """The task with this id.

        Raises:
            UserError: when there is none.
        """
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise UserError(f"no task with id {task_id} in {self.source}")


def skipped_line(count: int) -> str:
    """What a summary says of records left out by ``--skip-invalid`` (unreadable, or broken files)."""
    return f"{count} task record(s) unreadable or with broken files were skipped (--skip-invalid)"


def unreadable(task_set: TaskSet, *, skip_invalid: bool) -> list[Problem]:
    """The records of ``task_set`` that could not be read, refused unless ``skip_invalid``.

    A line of ``data.jsonl`` that cannot be parsed stops a run, a generation or a judging with its
    line number: silently dropping it would average over fewer tasks without a word.

    Raises:
        UserError: naming the first unreadable record, when ``skip_invalid`` is false.
    """
    bad = [p for p in task_set.problems if p.severity == "error"]
    if bad and not skip_invalid:
        first = bad[0]
        where = f"line {first.line}" if first.line is not None else "its record"
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise UserError(
            f"{task_set.source} {where}: {first.field}: {first.message}{more}; fix it, or pass "
            "--skip-invalid to go on without the unreadable record(s)"
        )
    return bad


def load_tasks(path: str | Path) -> TaskSet:
    """Load tasks from a dataset root, a ``.jsonl`` file or a single task folder.

    Raises:
        UserError: when the path does not exist or holds no task records.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise UserError(f"{path} does not exist")
    if not path.is_dir():
        if path.suffix != ".jsonl":
            raise UserError(f"{path} is not a .jsonl task file")
        return _load_jsonl(path)  # refused there unless a regular file
    jsonl = _jsonl_in(path)
    if jsonl is not None:
        return _load_jsonl(jsonl)
    return _load_single_folder(path)


def _jsonl_in(folder: Path) -> Path | None:
    preferred = folder / "data.jsonl"
    if preferred.exists():
        return preferred  # read only if a regular file (a FIFO there is refused, not waited on)
    candidates = sorted(p for p in folder.glob("*.jsonl") if (folder / p.stem).is_dir())
    if len(candidates) > 1:
        names = ", ".join(p.name for p in candidates)
        raise UserError(f"{folder} holds several task files ({names}); pass one of them")
    return candidates[0] if candidates else None


def _load_jsonl(jsonl: Path) -> TaskSet:
    tasks_root = jsonl.parent / jsonl.stem
    tasks: list[Task] = []
    problems: list[Problem] = []
    text = read_regular_text(jsonl)
    first_line: dict[int, int] = {}
    # JSON Lines ends a record at "\n" only: U+2028 and friends may sit inside a string
    for lineno, raw in enumerate(text.split("\n"), start=1):
        raw = raw.removesuffix("\r")
        if not raw.strip():
            continue
        record, found = parse_record(raw, line=lineno)
        problems.extend(found)
        if record is None:
            continue
        if record.id in first_line:
            message = f"duplicate id {record.id} (first on line {first_line[record.id]}); line not used"
            problems.append(
                Problem(severity="error", task_id=record.id, line=lineno, field="id", message=message)
            )
            continue
        first_line[record.id] = lineno
        tasks.append(Task(record, tasks_root / str(record.id), line=lineno))
    if not tasks and not problems:
        raise UserError(f"{jsonl} holds no task records")
    return TaskSet(source=jsonl, tasks=tasks, problems=problems)


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (following links): safe to read to its end, where a FIFO
    or a device would block or never end."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def read_regular_text(path: Path) -> str:
    """The UTF-8 text of ``path``, read only when it is a regular file (a FIFO or a device would
    block or never end).

    Raises:
        UserError: when it is not a regular file or cannot be read.
    """
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc}") from exc
    if not stat.S_ISREG(mode):
        raise UserError(f"cannot read {path}: not a regular file")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from exc


def _load_single_folder(folder: Path) -> TaskSet:
    own = folder / TASK_RECORD
    if own.is_file():
        record, problems = parse_record(read_regular_text(own), line=None)
        tasks = [Task(record, folder)] if record is not None else []
        return TaskSet(source=own, tasks=tasks, problems=problems)
    parent_jsonl = folder.parent.parent / f"{folder.parent.name}.jsonl"
    if parent_jsonl.is_file() and folder.name.isdigit():
        loaded = _load_jsonl(parent_jsonl)
        wanted = int(folder.name)
        return TaskSet(
            source=parent_jsonl,
            tasks=[t for t in loaded.tasks if t.id == wanted],
            problems=[p for p in loaded.problems if p.task_id in (None, wanted)],
        )
    raise UserError(
        f"{folder} is not a task dataset: expected data.jsonl (official layout), "
        f"a task folder <root>/<stem>/<id> next to <root>/<stem>.jsonl, or a folder with {TASK_RECORD}"
    )


def parse_record(raw: str, line: int | None) -> tuple[TaskRecord | None, list[Problem]]:
    """Parse one JSON task record, turning every defect into a :class:`Problem`."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, [Problem(severity="error", task_id=None, line=line, field="json", message=str(exc))]
    if not isinstance(data, dict):
        msg = f"expected a JSON object, found {type(data).__name__}"
        return None, [Problem(severity="error", task_id=None, line=line, field="json", message=msg)]
    raw_id = data.get("id")
    task_id = raw_id if type(raw_id) is int and 0 <= raw_id <= MAX_TASK_ID else None
    try:
        return TaskRecord.model_validate(data), []
    except ValidationError as exc:
        problems = [
            Problem(
                severity="error",
                task_id=task_id,
                line=line,
                field=_loc(err["loc"]) or "record",
                message=_error_text(err),
            )
            for err in exc.errors(include_url=False)
        ]
        return None, problems


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _error_text(err: object) -> str:
    if not isinstance(err, dict):
        return str(err)
    msg = str(err.get("msg", "invalid"))  # pyright: ignore[reportUnknownMemberType]
    if err.get("type") == "literal_error":  # pyright: ignore[reportUnknownMemberType]
        return f"unknown value {err.get('input')!r}: {msg.lower()}"  # pyright: ignore[reportUnknownMemberType]
    if err.get("type") == "missing":  # pyright: ignore[reportUnknownMemberType]
        return "required field is missing"
    return msg
