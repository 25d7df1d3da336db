"""A run on a prepared dataset takes its checkpoints' OCR text and embeddings from the task features:
no checkpoint is read or embedded again, even with the metric cache off, and the manifest says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_designs import READ
from PIL import Image
from sample_tasks import sample_copy

from iwr_bench.cli import main
from iwr_bench.cli.prepare import prepare_features
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.engine.settings import MetricSettings
from iwr_bench.engine.setup import metric_designs, metric_store
from iwr_bench.engine.store import RunStore
from iwr_bench.engine.task_features import seed_task_features
from iwr_bench.metrics.hashing import as_image, pixel_digest
from iwr_bench.metrics.pair import CachedMetric, ThreadedMetric
from iwr_bench.scoring.evaluation import VisualMetrics

SETTINGS = MetricSettings(ocr_design="counting-text", image_design="effnet-lite0", device="cpu", cache=False)


def _checkpoints(tasks: list[Task]) -> set[str]:
    return {pixel_digest(as_image(p.read_bytes())) for t in tasks for p in t.checkpoints.values()}


@pytest.mark.anyio
async def test_seeded_features_answer_for_every_checkpoint(tmp_path: Path) -> None:
    tasks = load_tasks(sample_copy(tmp_path / "ds", (101,))).tasks
    assert prepare_features(tasks, SETTINGS, quiet=True) == 0
    store = metric_store(SETTINGS)
    ocr, dino = metric_designs(SETTINGS, store)
    metrics = VisualMetrics(ocr=CachedMetric(ocr, store), dino=CachedMetric(dino, store))
    use = seed_task_features(metrics, tasks, SETTINGS)
    checkpoints = _checkpoints(tasks)
    offered = use.describe()
    assert {role: (u["tasks"], u["images"], u["served"]) for role, u in offered.items()} == {
        "ocr": (1, len(checkpoints), 0),
        "dino": (1, len(checkpoints), 0),
    }
    READ.clear()
    candidate = Image.new("RGB", (1280, 720), "white")
    pairs = [(as_image(p.read_bytes()), candidate) for p in tasks[0].checkpoints.values()]
    await metrics.ocr(pairs)
    await metrics.dino(pairs)
    assert [pixel_digest(candidate)] == READ  # only the candidate was read
    assert isinstance(dino, ThreadedMetric) and dino.features is not None and dino.features.computed == 1
    served = use.describe()
    assert served["ocr"]["served"] == served["dino"]["served"] == len(checkpoints)


def test_another_backend_takes_nothing_from_them(tmp_path: Path) -> None:
    tasks = load_tasks(sample_copy(tmp_path / "ds", (101,))).tasks
    assert prepare_features(tasks, SETTINGS, quiet=True) == 0
    other = SETTINGS.model_copy(update={"ocr_design": "phash", "image_design": "counting-text"})
    store = metric_store(other)
    ocr, image = metric_designs(other, store)
    use = seed_task_features(VisualMetrics(ocr=ocr, dino=image), tasks, other).describe()
    assert use["ocr"]["images"] == 0 and "keeps no per-image value" in use["ocr"]["note"]
    assert use["dino"]["images"] == len(_checkpoints(tasks))  # the same text design, in another role


@pytest.mark.browser
def test_a_run_on_a_prepared_dataset_reads_no_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = sample_copy(tmp_path / "ds", (101, 102))
    tasks = load_tasks(root).tasks
    assert prepare_features(tasks, SETTINGS, quiet=True) == 0
    run_file = tmp_path / "run.toml"
    run_file.write_text(
        'plugins = ["counting_designs"]\n[metrics]\nocr_design = "counting-text"\n'
        'image_design = "effnet-lite0"\ndevice = "cpu"\n'
    )
    run = tmp_path / "run"
    READ.clear()
    argv = ["run", "-c", str(run_file), "--tasks", str(root), "--model", "blank", "--no-metric-cache"]
    assert main([*argv, "--out", str(run), "--quiet"]) == 0
    assert READ, "the blank page's screenshots were read"
    assert not set(READ) & _checkpoints(tasks), "a checkpoint was read again"
    with RunStore.open_run(run, readonly=True) as store:
        used = store.manifest()["task_features"]
    for role in ("ocr", "dino"):
        assert used[role]["tasks"] == 2 and used[role]["images"] == len(_checkpoints(tasks))
        assert used[role]["served"] >= 2, used  # at least each task's initial state was scored
    capsys.readouterr()
    assert main(["runs", "show", str(run)]) == 0
    assert '"served"' in capsys.readouterr().out
