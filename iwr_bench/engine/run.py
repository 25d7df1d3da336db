"""The engine: every (task, model) pair flows through its stages on one anyio loop, resumably.

A pair's stages are generate (model calls), replay (a browser page), metrics (metric workers,
batched across pairs), rubric (judge calls) and record. Each waits on its own named limit and
gives it back as soon as it is done, handing the next stage data (a page folder, a replay and its
evidence folder, measured pairs), so while one page's metrics run the browser replays the next.
Browser pages go round-robin over the models. Everything is recorded in the run's store as it
happens, files first, so a run stopped in any way continues with ``resume=True``: finished jobs
are skipped, answers paid for are served from the response cache (generation) and the store
(judge models), and the final scores equal those of a run that was never stopped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from iwr_bench.agents.generation import Generator
from iwr_bench.agents.generation.prompt import load_prompt_file
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.backends.base import StageBackend, backend_record, make_backend
from iwr_bench.engine.bus import EventBus
from iwr_bench.engine.clock import StageName, WorkClock
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.control import request_cancel, watch_control, watch_signals
from iwr_bench.engine.deadlines import Background
from iwr_bench.engine.events import Event, RunFinished
from iwr_bench.engine.judge_model import SharedCalls
from iwr_bench.engine.judges import JudgeSet, build_judge_sets
from iwr_bench.engine.layout import RunLayout
from iwr_bench.engine.lifecycle import Recorder, run_folder_error
from iwr_bench.engine.limits import Limits
from iwr_bench.engine.lock import RunLock
from iwr_bench.engine.prepared import PreparedRun, open_run_store, run_limits, run_started, with_deadlines
from iwr_bench.engine.records import INFRA_FAILURES, RunOutcome
from iwr_bench.engine.reporters import RunReporters
from iwr_bench.engine.session import record_session, run_manifest
from iwr_bench.engine.setup import (
    GeneratorFactory,
    builtin_suite,
    load_run_tasks,
    opened_generators,
    pool_config,
    preload_libraries,
)
from iwr_bench.engine.stages import PairStages
from iwr_bench.engine.store import RunFolderError, RunStore
from iwr_bench.engine.summary import run_summary, stored_pairs, stored_task_score
from iwr_bench.engine.task_features import seed_task_features
from iwr_bench.engine.watch import Watchdog
from iwr_bench.errors import UserError
from iwr_bench.official_code import OfficialCode
from iwr_bench.registry import load_plugins
from iwr_bench.scoring.evaluation import VisualMetrics
from iwr_bench.tools.pool import PoolConfig

log = logging.getLogger(__name__)

__all__ = [
    "INFRA_FAILURES",
    "Engine",
    "PreparedRun",
    "RunOutcome",
    "builtin_suite",
    "request_cancel",
    "run_summary",
    "stored_pairs",
    "stored_task_score",
]


class Engine:
    """Runs one run folder: ``await Engine(config, run_dir).run()``."""

    def __init__(
        self,
        config: RunConfig,
        run_dir: Path,
        *,
        resume: bool = False,
        retry_failed: bool = False,
        generator_models: dict[str, Any] | None = None,
        judges: JudgeSet | None = None,
        subscribers: list[Callable[[Event], None]] | None = None,
        pool_config: PoolConfig | None = None,
        lock: RunLock | None = None,
        layout: RunLayout | None = None,
        accept_changed_plugins: bool = False,
        front_manifest: dict[str, Any] | None = None,
    ) -> None:
        self.config = config.with_defaults()
        self.run_dir = run_dir
        self.layout = layout or RunLayout(run_dir)
        """The stages this command runs and where its pages and evaluations are (``iwr run``: all)."""
        self.resume = resume
        self.retry_failed = retry_failed
        self.accept_changed_plugins = accept_changed_plugins
        """On resume, go on when a judge design's code changed since the last session (recorded)."""
        self.front_manifest = front_manifest or {}
        """What the front that made the run keeps in its manifest (``iwr judges eval``: ``lab``, the
        cases and designs its report reads back); written again by every session."""
        self._model_overrides = generator_models or {}
        self._judges_override = judges
        self._pool_config = pool_config
        self.clock = WorkClock()
        self.bus = EventBus()
        """The run's events (persisted in the store once :meth:`prepare` has opened it)."""
        for subscriber in subscribers or []:
            self.bus.subscribe(subscriber)
        self.prepared: PreparedRun | None = None
        """What :meth:`prepare` built; None before."""
        self.cancel_scope: anyio.CancelScope | None = None
        self._pairs: dict[tuple[int, str], anyio.CancelScope] = {}
        self.background = Background()
        """Tasks for judge calls and metric batches that their waiters may abandon at a deadline."""
        self.watchdog = Watchdog(self.config.limits.stall_after_s)
        self.reporters = RunReporters(self.bus, self.watchdog)
        """Agents' events, streamed text, occupancy, status and metric progress, onto the bus."""
        self._lock = lock
        self._own_lock = lock is None

    # -- set-up (everything that can fail for a user mistake fails here, before any work) -------

    def prepare(self) -> PreparedRun:
        """Load tasks, build generators and judges, open the store: the run, ready to start.

        Raises:
            UserError: bad paths, unknown ids, unknown roles, missing API keys, a bad run folder.
        """
        cfg, layout = self.config, self.layout
        load_plugins(cfg.plugins)  # outside designs register before anything is built
        tasks, source, skipped = load_run_tasks(cfg, generate=layout.generate)
        limits = run_limits(cfg, self.reporters.occupancy.changed)
        official = OfficialCode.load(cfg.official_code) if cfg.official_code else None
        prompt = load_prompt_file(cfg.prompt_file) if cfg.prompt_file else None
        if official is not None:  # the official generation prompt, read from the checkout
            prompt = official.generation_prompt()
        factory = GeneratorFactory(
            cfg, limits, layout.cache_dir, self._model_overrides, prompt, asset_base=layout.asset_base
        )
        # Judging existing pages needs no generator (nor a model's key).
        generators = {m.slug: factory(m) for m in cfg.models} if layout.generate else {}
        shared = cfg.judge.cache and self._judges_override is None
        shared_calls = SharedCalls.default() if shared else None  # opened on first use
        if self._judges_override is not None:
            sets = {"": self._judges_override}
        else:
            sets = build_judge_sets(cfg.judge, limits, self._get_call, self._put_call, shared_calls)
        judge_sets = with_deadlines(cfg, self.background, sets)
        backend = make_backend(cfg)  # where replay and metrics run
        backend.connect()
        store = self._open_store()
        self.bus.attach(store)
        recorder = Recorder(store, self.bus, self.run_dir, retry_failed=self.retry_failed)
        run = PreparedRun(
            tasks=tasks,
            task_source=source,
            skipped=skipped,
            limits=limits,
            factory=factory,
            generators=generators,
            official=official,
            shared_calls=shared_calls,
            judge_sets=judge_sets,
            backend=backend,
            store=store,
            recorder=recorder,
            stages=self._stages(tasks, limits, judge_sets, generators, backend, store, recorder),
        )
        self.prepared = run
        return run

    def _stages(
        self,
        tasks: list[Task],
        limits: Limits,
        judge_sets: dict[str, JudgeSet],
        generators: dict[str, Generator],
        backend: StageBackend,
        store: RunStore,
        recorder: Recorder,
    ) -> PairStages:
        cfg = self.config
        return PairStages(
            config=cfg,
            run_dir=self.run_dir,
            layout=self.layout,
            store=store,
            bus=self.bus,
            recorder=recorder,
            limits=limits,
            judges=judge_sets,
            generators=generators,
            models=cfg.model_slugs,
            tasks=tasks,
            pairs=sum(map(len, cfg.model_tasks([t.id for t in tasks]).values())),
            clock=self.clock,
            watchdog=self.watchdog,
            text=self.reporters.text,
            agent_sink=self.reporters.agent_sink,
            status=self.reporters.status,
            backend=backend,
        )

    @property
    def _ready(self) -> PreparedRun:
        """The prepared run (:meth:`run` prepares it first when needed)."""
        assert self.prepared is not None, "prepare() the engine first"
        return self.prepared

    def _open_store(self) -> RunStore:
        """Lock the run folder, then open (or create) its store; the lock is dropped on failure."""
        if self._lock is None:
            self._lock = RunLock(self.run_dir)
        return open_run_store(self.layout, self._lock, resume=self.resume, release=self._own_lock)

    def release_lock(self) -> None:
        """Let another process use the run folder (the engine does so when its run ends)."""
        if self._lock is not None:
            self._lock.release()

    def _get_call(self, key: str) -> str | None:
        return None if self.prepared is None else self.prepared.store.get_call(key)

    def _put_call(self, key: str, role: str, response: str) -> None:
        """Store a paid judge answer and wait until it is on disk (called from a worker thread)."""
        if self.prepared is not None:
            self.prepared.store.put_call(key, role, response)
            self.prepared.store.flush()

    def _metrics(self) -> VisualMetrics:
        run = self._ready
        timer = lambda: self.clock.work(StageName.metrics)  # noqa: E731 - the batches' clock
        metrics = run.backend.metrics(self.config, run.limits, timer, self.background)
        self.reporters.task_features = seed_task_features(metrics, run.tasks, self.config.metrics)
        self.reporters.metric_progress.attach(metrics)
        return metrics

    def _pool(self) -> PoolConfig:
        return self._pool_config or pool_config(self.config)

    def manifest(self, metrics: VisualMetrics | None) -> dict[str, Any]:
        """What the run used: versions, settings, seeds, sampling, backends, judges, policies."""
        run = self._ready
        return {
            "front": self.layout.front,
            **run_manifest(self.config, run, self._pool(), metrics),
            "backend": backend_record(self.config, run.backend),
            "task_features": self.reporters.task_features.describe(),
            **self.front_manifest,
        }

    # -- the run ----------------------------------------------------------------------------------

    async def run(self) -> RunOutcome:
        """Run (or continue) every pipeline; returns how the session ended.

        Raises:
            UserError: the run folder cannot be written (full disk, read-only); the run stays
                resumable and no job is recorded as failed for it.
        """
        run = self.prepared or self.prepare()
        for limit in run.limits.all():
            limit.reset_clock()
        self.reporters.status.start()
        self.reporters.metric_progress.start()
        try:
            return await self._run()
        finally:
            self.reporters.metric_progress.stop()
            self.reporters.status.stop()
            if run.shared_calls is not None:
                run.shared_calls.close()
            if self._own_lock:
                self.release_lock()

    async def _begin(self) -> VisualMetrics | None:
        """Check the folder, record the manifest and the session's start; the metrics to use."""
        run = self._ready
        if run.store.meta("status") is not None and not self.resume:
            raise UserError(
                f"{self.run_dir} already holds a run: continue it with `iwr run --resume {self.run_dir}`"
            )
        metrics = None
        if run.stages.judging_left():  # nothing left to judge: no metric, no torch import, no browser
            metrics = await anyio.to_thread.run_sync(self._metrics)  # builds no model (they load lazily)
            await anyio.to_thread.run_sync(preload_libraries)
        previous = record_session(
            run.store,
            self.manifest(metrics),
            accept_changed_plugins=self.accept_changed_plugins,
            front_manifest=self.front_manifest,
        )
        self.bus.publish(run_started(self.run_dir, self.config, run, resumed=previous is not None))
        return metrics

    async def _run(self) -> RunOutcome:
        run = self._ready
        started = time.perf_counter()
        metrics = await self._begin()
        status, message = "cancelled", "stopped before the end; resumable"  # until the work returns
        stopped: RunFolderError | None = None
        try:
            with anyio.CancelScope() as scope:
                self.cancel_scope = scope
                await self._work(scope, metrics)
            status, message = "completed", ""
            if scope.cancelled_caught:
                status, message = "cancelled", "stopped by a signal; resumable"
        except Exception as exc:
            stopped = run_folder_error(self.run_dir, exc)
            status, message = "failed", str(stopped) if stopped else f"{type(exc).__name__}: {exc}"
            if stopped is None:
                log.exception("run failed")
        wall = time.perf_counter() - started
        try:
            self.reporters.flush(run.limits.all())
            features = self.reporters.task_features
            if features.roles:  # this session built metrics: what the task features served
                run.store.set_manifest({"task_features": features.describe()})
            self.bus.publish(RunFinished(status=status, wall_s=round(wall, 3), message=message))  # type: ignore[arg-type]
            run.store.set_meta("status", status)
            await anyio.to_thread.run_sync(run.store.flush)  # every queued write is in the store
        except RunFolderError as exc:  # the disk filled up at the very end: still resumable
            stopped = stopped or exc
        if stopped is not None:
            raise stopped
        return RunOutcome(
            status=status,
            run_dir=self.run_dir,
            wall_s=wall,
            overhead_s=max(0.0, wall - self.clock.covered),
            work_s=self.clock.busy(),
            actions=self.reporters.actions_run,
            message=message,
            limit_idle_s={lim.name: round(lim.idle_s, 3) for lim in run.limits.all()},
        )

    async def _work(self, scope: anyio.CancelScope, metrics: VisualMetrics | None) -> None:
        """Open the browsers, models and judges the work left needs, then run every pair beside the
        run's watchers."""
        run = self._ready
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.background)  # closed last
            if run.stages.judging_left():
                with self.clock.work(StageName.replay):  # starting Chromium is browser time
                    await stack.enter_async_context(run.backend.open(self._pool()))
                for judges in run.judge_sets.values():
                    await stack.enter_async_context(judges)
            await stack.enter_async_context(opened_generators(run.generators))
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.reporters.tick, run.limits.all())
                tg.start_soon(watch_control, self.run_dir, self.cancel_job)
                tg.start_soon(watch_signals, scope)
                tg.start_soon(self.watchdog.run)
                async with anyio.create_task_group() as work:
                    pairs = self.config.model_tasks([t.id for t in run.tasks])
                    for task in run.tasks:
                        for slug in self.config.model_slugs:
                            if task.id in pairs[slug]:
                                work.start_soon(self._pipeline, task, slug, metrics)
                tg.cancel_scope.cancel()

    def cancel(self) -> None:
        """Stop the run cleanly (it stays resumable)."""
        if self.cancel_scope is not None:
            self.cancel_scope.cancel()

    def cancel_job(self, task_id: int, model: str) -> bool:
        """Stop one (task, model) pair; its running job is recorded as failed (``cancelled``).

        Returns False when that pair is not in progress. ``--resume --retry-failed`` redoes it.
        """
        scope = self._pairs.get((task_id, model))
        if scope is None:
            return False
        scope.cancel()
        return True

    # -- one (task, model) pair ------------------------------------------------------------------

    async def _pipeline(self, task: Task, slug: str, metrics: VisualMetrics | None) -> None:
        stages = self._ready.stages
        with anyio.CancelScope() as scope:
            self._pairs[(task.id, slug)] = scope
            try:
                result = await stages.generate(task, slug) if self.layout.generate else None
                if self.layout.judge:
                    await stages.judge(task, slug, result, metrics)
            finally:
                del self._pairs[(task.id, slug)]
        if scope.cancelled_caught:
            self._ready.recorder.cancelled(task.id, slug, stages.judged_names(slug))
