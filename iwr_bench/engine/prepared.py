"""A run as :meth:`~iwr_bench.engine.run.Engine.prepare` returns it: built and checked, before any work."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iwr_bench.agents.generation import Budget, Generator
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.backends.base import StageBackend
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.deadlines import Background
from iwr_bench.engine.events import RunStarted
from iwr_bench.engine.judge_model import SharedCalls
from iwr_bench.engine.judges import JudgeSet
from iwr_bench.engine.layout import RunLayout, replace_session
from iwr_bench.engine.lifecycle import Recorder
from iwr_bench.engine.limits import Limits, Report
from iwr_bench.engine.lock import RunLock
from iwr_bench.engine.setup import GeneratorFactory
from iwr_bench.engine.stages import PairStages
from iwr_bench.engine.store import STORE_NAME, RunStore
from iwr_bench.errors import UserError
from iwr_bench.official_code import OfficialCode


@dataclass
class PreparedRun:
    """What :meth:`Engine.prepare` built and checked, before any work: the tasks, the limits, the
    generators and judges, where replays and metrics run, the open store and the stages."""

    tasks: list[Task]
    """The run's tasks (those kept by ``only``)."""
    task_source: Path
    """Where they were read from."""
    skipped: list[dict[str, Any]]
    """Task records that could not be read (``skip_invalid``)."""
    limits: Limits
    """The run's named limits."""
    factory: GeneratorFactory
    """Builds each model's generator (and holds the run's budget)."""
    generators: dict[str, Generator]
    """Generators by model slug (empty when the generate stage does not run)."""
    official: OfficialCode | None
    """The authors' checkout (``official_code``), read once."""
    shared_calls: SharedCalls | None
    """Judge-model answers kept across runs (``[judge] cache``)."""
    judge_sets: dict[str, JudgeSet]
    """The judge set of each design label (``""``: the run's one design), with deadlines."""
    backend: StageBackend
    """Where replays and metrics run (connected)."""
    store: RunStore
    """The run's store (open; the run folder locked)."""
    recorder: Recorder
    """Records each job's end in the store."""
    stages: PairStages
    """Runs the stages of each (task, model) pair."""

    @property
    def judges(self) -> JudgeSet:
        """The first design's judge set (the rubric is the same in every set)."""
        return next(iter(self.judge_sets.values()))

    @property
    def budget(self) -> Budget:
        """The run's budget of paid generation calls."""
        return self.factory.budget


def own_tasks(config: RunConfig, task_ids: list[int]) -> dict[str, list[int]]:
    """The models judged on some of the run's tasks only, with those tasks."""
    every = config.model_tasks(task_ids)
    return {slug: ids for slug, ids in every.items() if ids != task_ids}


def run_limits(cfg: RunConfig, report: Report) -> Limits:
    """The run's named limits (``[limits]``), each reporting its occupancy changes to ``report``."""
    return Limits(
        browser_pages=cfg.limits.browser_pages,
        metric_workers=cfg.limits.metric_workers,
        judge_calls=cfg.limits.judge_calls,
        provider_calls=cfg.limits.providers,
        default_provider_calls=cfg.limits.model_calls,
        report=report,
        recover_after=cfg.limits.recover_after_s,
    )


def open_run_store(layout: RunLayout, lock: RunLock, *, resume: bool, release: bool) -> RunStore:
    """Lock the run folder, then open (or create) its store; with ``release``, the lock is dropped
    when that fails.

    Raises:
        UserError: the folder holds a run and ``resume`` is not set, or another command's run.
    """
    run_dir = layout.run_dir
    lock.acquire()
    try:
        if not resume and layout.front != "run":
            replace_session(run_dir, layout.front)  # `iwr judge` / `generate` start over
        if not resume and (run_dir / STORE_NAME).exists():
            raise UserError(f"{run_dir} already holds a run: continue it with `iwr run --resume {run_dir}`")
        return RunStore.open_run(run_dir)
    except BaseException:
        if release:
            lock.release()
        raise


def with_deadlines(cfg: RunConfig, background: Background, sets: dict[str, JudgeSet]) -> dict[str, JudgeSet]:
    """The judge sets with each call bounded by ``[limits] judge_call_timeout_s``."""
    seconds = cfg.limits.judge_call_timeout_s
    return {label: judges.with_deadlines(seconds, background) for label, judges in sets.items()}


def run_started(run_dir: Path, cfg: RunConfig, run: PreparedRun, *, resumed: bool) -> RunStarted:
    """The event that opens a session: its models, tasks, limits and designs."""
    task_ids = [t.id for t in run.tasks]
    return RunStarted(
        run_id=run_dir.name,
        models=cfg.model_slugs,
        tasks=task_ids,
        model_tasks=own_tasks(cfg, task_ids),
        resumed=resumed,
        limits={lim.name: lim.capacity for lim in run.limits.all()},
        designs=[label for label in run.judge_sets if label],
    )
