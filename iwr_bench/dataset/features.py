"""A task's reference-side features, computed once and stored with it (``<task>/features.json``).

Every run compares each checkpoint with the screenshots of every model, so the checkpoint's own
half of the work (the text OCR reads, its image embedding) is the same every time. ``iwr record``
and ``iwr tasks prepare`` compute it once and store it in the task folder; a run seeds it into its
metric store before any computing (:mod:`iwr_bench.engine.task_features`).

The file (JSON, written atomically: a temporary file beside it, then a rename)::

    {"format": "iwr-task-features", "version": 1, "task_id": 101,
     "checkpoints": {"step_0.png": {"sha256": "<file bytes>", "digest": "<pixel digest>"}, ...},
     "backends": {"<namespace(backend)>": {
         "backend": {...the Backend record...},
         "values": {"text": {"<pixel digest>": "read text"},
                    "embedding": {"<pixel digest>": {"dim": 768, "b64": "<float32 bytes>"}}}}}}

Values are keyed by backend namespace (:func:`~iwr_bench.metrics.cache.namespace`: engine, model,
weights) and pixel digest, exactly as the metric store keys them, so another backend never reuses
them and a changed checkpoint simply has no value. ``checkpoints`` lets ``iwr tasks prepare`` find
a checkpoint's pixel digest without decoding it again.

A task folder that cannot be written (the built-in suite of a read-only install) keeps its file
in the metric cache folder instead: ``<cache dir>/task-features/<folder key>.json``; readers merge
both. A file that cannot be read or does not fit this format is ignored with a warning (its
values are computed again), never an error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from PIL import Image
from pydantic import BaseModel, Field, ValidationError

from iwr_bench.dataset.layout import Task
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.cache import default_cache_dir
from iwr_bench.metrics.hashing import as_image, pixel_digest
from iwr_bench.metrics.image_features import ImageFeatureCache

log = logging.getLogger(__name__)

FEATURES_FILE = "features.json"
"""Name of the feature file in a task folder (the official tools ignore it)."""
FALLBACK_DIR = "task-features"
"""Folder of the metric cache folder that holds the files of tasks whose folder is read-only."""
CHUNK = 4
"""Images computed together while preparing (progress moves after each group)."""


class CheckpointDigest(BaseModel):
    """What a checkpoint file held when its features were computed."""

    sha256: str
    """SHA-256 of the file's bytes."""
    digest: str
    """Pixel digest of its image (:func:`~iwr_bench.metrics.hashing.pixel_digest`): the key of its values."""


class BackendFeatures(BaseModel):
    """The values one metric backend computed for the task's checkpoints."""

    backend: Backend
    """What computed them."""
    values: dict[str, dict[str, Any]] = Field(default_factory=dict[str, dict[str, Any]])
    """Per kind (``text``, ``embedding``), the JSON value of each image by pixel digest."""


class TaskFeatures(BaseModel):
    """A task's feature file."""

    format: Literal["iwr-task-features"] = "iwr-task-features"
    """Marks the file."""
    version: Literal[1] = 1
    """Format version."""
    task_id: int
    """The task's id."""
    checkpoints: dict[str, CheckpointDigest] = Field(default_factory=dict[str, CheckpointDigest])
    """Per checkpoint file name, its bytes' and pixels' digests."""
    backends: dict[str, BackendFeatures] = Field(default_factory=dict[str, BackendFeatures])
    """Per backend namespace, its values."""

    def values(self, backend_namespace: str, kind: str) -> dict[str, Any]:
        """The stored values of one backend and kind, by pixel digest (empty: none)."""
        entry = self.backends.get(backend_namespace)
        return dict(entry.values.get(kind, {})) if entry is not None else {}

    def merged(self, other: TaskFeatures) -> TaskFeatures:
        """Both files' values together (this one's win where both hold one)."""
        out = other.model_copy(deep=True)
        out.checkpoints.update(self.checkpoints)
        for ns, entry in self.backends.items():
            into = out.backends.setdefault(ns, BackendFeatures(backend=entry.backend))
            into.backend = entry.backend
            for kind, values in entry.values.items():
                into.values.setdefault(kind, {}).update(values)
        return out


def feature_root(cache_dir: str | Path | None = None) -> Path:
    """The metric cache folder (``cache_dir``, else the default one): read-only tasks' files go under it."""
    return Path(cache_dir).expanduser() if cache_dir else default_cache_dir()


def task_path(task: Task) -> Path:
    """The feature file in the task's folder."""
    return task.folder / FEATURES_FILE


def fallback_path(task: Task, root: Path) -> Path:
    """The feature file kept for ``task`` under the metric cache folder ``root``."""
    key = hashlib.sha256(str(task.folder.resolve()).encode()).hexdigest()[:16]
    return root / FALLBACK_DIR / f"{key}-{task.id}.json"


def read_features(path: Path, task_id: int) -> TaskFeatures | None:
    """The file at ``path``; None when there is none, or (with a warning) when it cannot be used."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("ignoring task features %s (they are computed again): cannot read it: %s", path, exc)
        return None
    try:
        features = TaskFeatures.model_validate(json.loads(text))
    except (json.JSONDecodeError, ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        log.warning(
            "ignoring task features %s (they are computed again): not a feature file (%s); "
            "`iwr tasks prepare` writes it anew",
            path,
            first,
        )
        return None
    if features.task_id != task_id:
        log.warning(
            "ignoring task features %s (they are computed again): they belong to task %s, not %s",
            path,
            features.task_id,
            task_id,
        )
        return None
    return features


def load_features(task: Task, root: Path) -> TaskFeatures:
    """Everything stored for ``task``: its folder's file merged with the one under ``root`` (empty: none)."""
    found = [
        f for f in (read_features(p, task.id) for p in (task_path(task), fallback_path(task, root))) if f
    ]
    if not found:
        return TaskFeatures(task_id=task.id)
    out = found[-1]
    for f in reversed(found[:-1]):
        out = f.merged(out)
    return out


def write_features(task: Task, features: TaskFeatures, root: Path) -> Path:
    """Store ``features`` atomically in the task folder, or, when it cannot be written, under ``root``.

    Returns:
        Where the file went.

    Raises:
        OSError: neither place can be written.
    """
    text = features.model_dump_json(indent=1) + "\n"
    try:
        _atomic_write(task_path(task), text)
        return task_path(task)
    except OSError as exc:
        fallback = fallback_path(task, root)
        log.debug("task %s: folder not writable (%s); features go to %s", task.id, exc, fallback)
        fallback.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(fallback, text)
        return fallback


def _atomic_write(path: Path, text: str) -> None:
    """Write a temporary file beside ``path`` (mode as ``open`` makes it), then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -- computing them ----------------------------------------------------------------------------


class FeatureDesign(Protocol):
    """A metric design as preparing sees it: its backend and, when it has one, its per-image cache."""

    @property
    def backend(self) -> Backend:
        """What computes it."""
        ...


def feature_cache(design: FeatureDesign) -> ImageFeatureCache[Any] | None:
    """The design's per-image value cache, or None when it keeps no per-image value (``phash``)."""
    found = getattr(design, "features", None)
    return found if isinstance(found, ImageFeatureCache) else None


@dataclass
class Pending:
    """One task's checkpoints and the values still missing from its stored features."""

    task: Task
    features: TaskFeatures
    """What is stored (checkpoint digests brought up to date)."""
    digests: dict[str, str]
    """Pixel digest of each checkpoint, by file name."""
    missing: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """Per design role, the checkpoint file names whose value is missing."""

    @property
    def images(self) -> int:
        """Values to compute."""
        return sum(len(names) for names in self.missing.values())


def checkpoint_digests(task: Task, known: Mapping[str, CheckpointDigest]) -> dict[str, CheckpointDigest]:
    """Each checkpoint's digests, decoding only files whose bytes changed since ``known``."""
    out: dict[str, CheckpointDigest] = {}
    for path in task.checkpoints.values():
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        before = known.get(path.name)
        digest = (
            before.digest if before is not None and before.sha256 == sha else pixel_digest(as_image(data))
        )
        out[path.name] = CheckpointDigest(sha256=sha, digest=digest)
    return out


def plan(task: Task, designs: Mapping[str, FeatureDesign], root: Path) -> Pending:
    """What ``designs`` still have to compute for the checkpoints of ``task``."""
    features = load_features(task, root)
    features.checkpoints = checkpoint_digests(task, features.checkpoints)
    digests = {name: c.digest for name, c in features.checkpoints.items()}
    pending = Pending(task=task, features=features, digests=digests)
    for role, design in designs.items():
        cache = feature_cache(design)
        if cache is None:
            continue
        stored = features.values(cache.backend_namespace, cache.kind)
        absent = [n for n, d in digests.items() if d not in stored or cache.codec.decode(stored[d]) is None]
        if absent:
            pending.missing[role] = absent
    return pending


def compute(
    pending: Pending, designs: Mapping[str, FeatureDesign], done: Callable[[int], None] = lambda n: None
) -> TaskFeatures:
    """Compute the missing values (``done`` hears of each group of images), and keep only the values
    of the current checkpoints for the designs' backends. Runs on the calling thread."""
    features = pending.features
    images: dict[str, Image.Image] = {}
    for role, names in pending.missing.items():
        cache = feature_cache(designs[role])
        assert cache is not None
        for start in range(0, len(names), CHUNK):
            group = names[start : start + CHUNK]
            for name in group:
                if name not in images:
                    images[name] = as_image((pending.task.checkpoints_dir / name).read_bytes())
            digests = [pending.digests[n] for n in group]
            values = cache.by_digest([images[n] for n in group], digests)
            entry = _entry(features, designs[role], cache)
            stored = entry.values.setdefault(cache.kind, {})
            stored.update({d: cache.codec.encode(v) for d, v in zip(digests, values, strict=True)})
            done(len(group))
    current = set(pending.digests.values())
    for design in designs.values():
        cache = feature_cache(design)
        entry = features.backends.get(cache.backend_namespace) if cache is not None else None
        if cache is not None and entry is not None:
            kept = {d: v for d, v in entry.values.get(cache.kind, {}).items() if d in current}
            entry.values[cache.kind] = kept
    return features


def _entry(features: TaskFeatures, design: FeatureDesign, cache: ImageFeatureCache[Any]) -> BackendFeatures:
    entry = features.backends.get(cache.backend_namespace)
    if entry is None:
        entry = features.backends[cache.backend_namespace] = BackendFeatures(backend=design.backend)
    else:
        entry.backend = design.backend
    return entry


@dataclass
class Prepared:
    """What preparing a set of tasks did."""

    values: int = 0
    """Values stored (computed, or found in the metric cache)."""
    written: list[Path] = field(default_factory=list[Path])
    """Feature files written."""


def prepare_tasks(
    pendings: Sequence[Pending],
    designs: Mapping[str, FeatureDesign],
    root: Path,
    done: Callable[[int], None] = lambda n: None,
) -> Prepared:
    """Compute and store what each pending task misses (a task with nothing missing is left alone)."""
    out = Prepared()
    for pending in pendings:
        if not pending.images:
            continue
        features = compute(pending, designs, done)
        out.values += pending.images
        out.written.append(write_features(pending.task, features, root))
    return out


def describe_designs(designs: Mapping[str, FeatureDesign]) -> Iterable[tuple[str, str, bool]]:
    """Per role: its backend label and whether it keeps per-image values."""
    for role, design in designs.items():
        yield role, design.backend.label, feature_cache(design) is not None
