"""``iwr tasks prepare``: compute the reference-side features of a dataset once and store them.

Also used by ``iwr record``, which prepares the task it has just written.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Task as Bar
from rich.text import Text

from iwr_bench.dataset.features import (
    FEATURES_FILE,
    FeatureDesign,
    describe_designs,
    feature_cache,
    feature_root,
    plan,
    prepare_tasks,
)
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.engine.settings import MetricSettings
from iwr_bench.errors import UserError


def add_metric_options(p: argparse.ArgumentParser) -> None:
    """The options that choose the metric designs, as ``iwr run`` and its run file name them."""
    p.add_argument("-c", "--config", type=Path, help="take [metrics] and plugins from this TOML run file")
    p.add_argument(
        "--ocr-design", metavar="NAME", help="metric design behind OCR (default ocr, or $IWR_OCR_DESIGN)"
    )
    p.add_argument(
        "--image-design",
        metavar="NAME",
        help="metric design behind image similarity (default dino, or $IWR_IMAGE_DESIGN)",
    )
    p.add_argument("--dino", help="DINOv2 hub id or local folder")
    p.add_argument("--device", help="torch device: auto (default; GPU when present), cpu, cuda, ...")
    p.add_argument("--no-metric-cache", action="store_true", help="do not read or fill the metric cache")
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="import this first (it registers designs)",
    )


def metric_settings(args: argparse.Namespace) -> tuple[MetricSettings, list[str]]:
    """The run file's ``[metrics]`` (or the defaults) with the options over it, and the plugins to load.

    Raises:
        UserError: a bad run file.
    """
    from iwr_bench.engine.config import RunConfig, load_run_config, plugin_refs

    config = load_run_config(args.config) if args.config else RunConfig()
    updates = {
        key: value
        for key, value in (
            ("ocr_design", args.ocr_design),
            ("image_design", args.image_design),
            ("dino", args.dino),
            ("device", args.device),
        )
        if value
    }
    if args.no_metric_cache:
        updates["cache"] = False
    plugins = [*config.plugins, *plugin_refs(args.plugin, Path.cwd())]
    return config.metrics.model_copy(update=updates), plugins


def cmd_prepare(args: argparse.Namespace) -> int:
    """Compute the features every task of the dataset misses; a second time, nothing."""
    from iwr_bench.engine.setup import builtin_suite

    settings, plugins = metric_settings(args)
    source = builtin_suite() if str(args.dataset) == "builtin" else Path(args.dataset)
    task_set = load_tasks(source)
    if task_set.problems:
        print(
            f"warning: {len(task_set.problems)} record(s) of {task_set.source} cannot be read; "
            "they are left out"
        )
    if not task_set.tasks:
        raise UserError(f"{source} holds no readable task (run `iwr tasks validate {source}`)")
    return prepare_features(task_set.tasks, settings, plugins, quiet=args.quiet)


def prepare_features(
    tasks: Sequence[Task], settings: MetricSettings, plugins: Sequence[str] = (), *, quiet: bool = False
) -> int:
    """Compute and store what ``tasks`` miss for the designs of ``settings``, with a progress bar
    on stderr; returns the exit status (0).

    Raises:
        UserError: an unknown design or plugin.
    """
    from iwr_bench.engine.setup import metric_designs, metric_store
    from iwr_bench.registry import load_plugins

    load_plugins(plugins)
    store = metric_store(settings)
    ocr, image = metric_designs(settings, store)
    designs: dict[str, FeatureDesign] = {"ocr": ocr, "dino": image}
    kept = [label for _, label, has in describe_designs(designs) if has]
    none = [label for _, label, has in describe_designs(designs) if not has]
    if none:
        print(f"{', '.join(none)}: keeps no per-image value; nothing to prepare for it")
    if not kept:
        return 0
    root = feature_root(settings.cache_dir or None)
    console = Console(stderr=True)
    reading = (
        console.status(f"reading the checkpoints of {len(tasks)} task(s)") if not quiet else nullcontext()
    )
    with reading:
        pendings = [plan(task, designs, root) for task in tasks]
    checkpoints = sum(len(p.digests) for p in pendings)
    total = sum(p.images for p in pendings)
    if total == 0:
        print(
            f"nothing to compute: the {checkpoints} checkpoint(s) of {len(tasks)} task(s) already have "
            f"their features for {', '.join(kept)}"
        )
        return 0
    caches = [c for c in (feature_cache(d) for d in designs.values()) if c is not None]
    started = time.perf_counter()
    with Progress(
        TextColumn("features"),
        BarColumn(),
        ImagesColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=quiet,
    ) as progress:
        bar = progress.add_task("features", total=total)
        done = prepare_tasks(pendings, designs, root, lambda n: progress.advance(bar, n))
    wall = time.perf_counter() - started
    computed = sum(c.computed for c in caches)
    print(
        f"stored {done.values} value(s) of {', '.join(kept)} for {checkpoints} checkpoint(s) of "
        f"{len(tasks)} task(s) in {wall:.1f} s: {computed} computed, {done.values - computed} reused "
        "(from the metric cache, or a checkpoint with the same pixels)"
    )
    in_folders = [p for p in done.written if p.name == FEATURES_FILE]
    elsewhere = [p for p in done.written if p.name != FEATURES_FILE]
    if in_folders:
        print(f"stored in {len(in_folders)} task folder(s) as {FEATURES_FILE}")
    if elsewhere:
        print(
            f"{len(elsewhere)} task folder(s) cannot be written (read-only): their features are stored in "
            f"{elsewhere[0].parent} instead"
        )
    return 0


class ImagesColumn(ProgressColumn):
    """``12/40 images, 28 left, 2.1 s/image``."""

    def render(self, task: Bar) -> Text:
        """The column's text for ``task``."""
        done, total = int(task.completed), int(task.total or 0)
        speed = task.finished_speed or task.speed
        if not speed:
            rate = "rate unknown"
        else:
            rate = f"{speed:.1f} images/s" if speed >= 1 else f"{1 / speed:.1f} s/image"
        return Text(f"{done}/{total} images, {total - done} left, {rate}")
