"""Task feature files: computed once, read back, kept per backend, robust to damage and read-only folders."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from counting_designs import READ, backend, grey_text
from PIL import Image
from read_only import read_only

from iwr_bench.dataset.features import (
    FEATURES_FILE,
    fallback_path,
    load_features,
    plan,
    prepare_tasks,
    task_path,
)
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.metrics.cache import MetricCache, namespace
from iwr_bench.metrics.hashing import as_image, pixel_digest
from iwr_bench.metrics.pair import ThreadedMetric, text_metric


def _reader(engine: str = "counting-reader 1") -> dict[str, ThreadedMetric]:
    return {"ocr": text_metric(backend(engine), grey_text, MetricCache.memory())}


def _prepare(tasks: list[Task], root: Path, engine: str = "counting-reader 1") -> int:
    designs = _reader(engine)
    pendings = [plan(t, designs, root) for t in tasks]
    prepare_tasks(pendings, designs, root)
    return sum(p.images for p in pendings)


def _digests(task: Task) -> set[str]:
    return {pixel_digest(as_image(p.read_bytes())) for p in task.checkpoints.values()}


def test_features_round_trip_and_a_second_prepare_computes_nothing(tasks_root: Path, tmp_path: Path) -> None:
    tasks = load_tasks(tasks_root).tasks
    READ.clear()
    assert _prepare(tasks, tmp_path / "cache") == sum(len(t.checkpoints) for t in tasks)
    assert len(READ) == len(set().union(*(_digests(t) for t in tasks)))
    for task in tasks:
        stored = load_features(task, tmp_path / "cache")
        texts = stored.values(namespace(backend()), "text")
        assert set(texts) == _digests(task) and all(v.startswith("grey ") for v in texts.values())
        assert stored.backends[namespace(backend())].backend == backend()
        assert set(stored.checkpoints) == {p.name for p in task.checkpoints.values()}
    READ.clear()
    assert _prepare(tasks, tmp_path / "cache") == 0 and READ == []


def test_another_backend_recomputes_and_both_are_kept(tasks_root: Path, tmp_path: Path) -> None:
    [task, *_] = load_tasks(tasks_root).tasks
    _prepare([task], tmp_path)
    assert _prepare([task], tmp_path, engine="counting-reader 2") == len(task.checkpoints)
    stored = load_features(task, tmp_path)
    assert {namespace(backend()), namespace(backend("counting-reader 2"))} <= set(stored.backends)
    assert _prepare([task], tmp_path) == 0


def test_a_changed_checkpoint_is_computed_again(tasks_root: Path, tmp_path: Path) -> None:
    [task, *_] = load_tasks(tasks_root).tasks
    _prepare([task], tmp_path)
    step = task.checkpoints[0]
    with Image.open(step) as old:
        size = old.size
    Image.new("RGB", size, "purple").save(step)
    pending = plan(task, _reader(), tmp_path)
    assert pending.missing == {"ocr": [step.name]}


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # a partial write
        lambda text: "[1, 2, 3]",
        lambda text: text.replace('"version": 1', '"version": 99'),
        lambda text: text.replace('"task_id": 1', '"task_id": 777'),
        lambda text: "\x00\xff not json",
    ],
    ids=["partial", "not-an-object", "unknown-version", "another-task", "garbage"],
)
def test_a_damaged_file_is_ignored_with_a_warning_and_rewritten(
    damage: object, tasks_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    task = load_tasks(tasks_root).by_id(1)
    _prepare([task], tmp_path)
    path = task_path(task)
    assert callable(damage)
    path.write_text(damage(path.read_text()))
    READ.clear()
    with caplog.at_level(logging.WARNING, logger="iwr_bench.dataset.features"):
        assert _prepare([task], tmp_path) == len(task.checkpoints)
    assert f"ignoring task features {path}" in caplog.text
    assert len(READ) == len(_digests(task))  # computed again
    json.loads(path.read_text())  # written anew, whole
    caplog.clear()
    assert _prepare([task], tmp_path) == 0 and not caplog.text


def test_a_read_only_task_keeps_its_features_in_the_cache_folder(tasks_root: Path, tmp_path: Path) -> None:
    task = load_tasks(tasks_root).by_id(1)
    root = tmp_path / "cache"
    with read_only(task.folder):
        assert _prepare([task], root) == len(task.checkpoints)
        assert not (task.folder / FEATURES_FILE).exists()
        assert fallback_path(task, root).is_file()
        assert set(load_features(task, root).values(namespace(backend()), "text")) == _digests(task)
        assert _prepare([task], root) == 0
