"""``iwr tasks prepare`` on a copy of two built-in tasks: it computes, then a second time nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_designs import READ
from read_only import read_only
from sample_tasks import sample_copy

from iwr_bench.cli import main
from iwr_bench.dataset.features import FEATURES_FILE, fallback_path, load_features
from iwr_bench.dataset.layout import load_tasks

DESIGNS = ["--ocr-design", "counting-text", "--image-design", "effnet-lite0", "--plugin", "counting_designs"]


def test_prepare_computes_the_missing_features_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metric_cache: Path
) -> None:
    root = sample_copy(tmp_path / "ds")
    tasks = load_tasks(root).tasks
    checkpoints = sum(len(t.checkpoints) for t in tasks)
    argv = ["tasks", "prepare", str(root), *DESIGNS, "--device", "cpu", "--no-metric-cache"]
    READ.clear()
    folder = load_tasks(root).by_id(102).folder
    with read_only(folder):
        assert main(argv) == 0
    out = capsys.readouterr().out
    distinct = len({c.read_bytes() for t in tasks for c in t.checkpoints.values()})
    assert f"stored {2 * checkpoints} value(s)" in out and f"{2 * distinct} computed" in out, out
    assert "stored in 1 task folder(s) as features.json" in out
    assert (
        f"1 task folder(s) cannot be written (read-only): their features are stored in {metric_cache}" in out
    )
    assert (tasks[0].folder / FEATURES_FILE).is_file() and not (folder / FEATURES_FILE).exists()
    assert fallback_path(tasks[1], metric_cache).is_file()
    assert len(READ) == distinct
    for task in tasks:
        stored = load_features(task, metric_cache)
        kinds = {kind for entry in stored.backends.values() for kind in entry.values}
        assert kinds == {"text", "embedding"} and len(stored.checkpoints) == len(task.checkpoints)

    READ.clear()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        f"nothing to compute: the {checkpoints} checkpoint(s) of 2 task(s) already have their features" in out
    )
    assert READ == []


def test_a_design_without_per_image_values_has_nothing_to_prepare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = sample_copy(tmp_path / "ds", ids=(101,))
    assert main(["tasks", "prepare", str(root), "--ocr-design", "phash", "--image-design", "phash"]) == 0
    assert "keeps no per-image value; nothing to prepare for it" in capsys.readouterr().out
    assert not (root / "data" / "101" / FEATURES_FILE).exists()


def test_unknown_design_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = sample_copy(tmp_path / "ds", ids=(101,))
    assert main(["tasks", "prepare", str(root), "--image-design", "no-such-design"]) == 2
    assert "no-such-design" in capsys.readouterr().err
