"""The engine: every (task, model) pair flows through its stages on one anyio loop, resumably.

A pair's stages are generate (model calls), replay (a browser page), metrics (metric workers,
batched across pairs), rubric (judge calls) and record. Each waits on its own named limit and
gives it back as soon as it is done, handing the next stage data (a page folder, a replay and
its evidence folder, measured pairs), so while one page's metrics run the browser replays the
next. Browser pages go round-robin over the models. Everything is recorded in the run's store
as it happens, files first, so a run stopped in any way continues with ``resume=True``: finished
jobs are skipped, answers already paid for are served from the response cache (generation) and
the store (judge models), and the final scores equal those of a run that was never stopped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from iwr_bench.agents.events import ActionExecuted as AgentActionExecuted
from iwr_bench.agents.events import AgentEvent, Emit
from iwr_bench.agents.events import JudgeDelta as AgentJudgeDelta
from iwr_bench.agents.generation import Generator
from iwr_bench.agents.generation.prompt import load_prompt_file
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.backends.base import make_backend
from iwr_bench.engine.clock import StageName, WorkClock
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.control import request_cancel, watch_control, watch_signals
from iwr_bench.engine.deadlines import Background
from iwr_bench.engine.events import (
    Event,
    EventBus,
    RunFinished,
    RunStarted,
    TextCoalescer,
    from_agent,
)
from iwr_bench.engine.judge_model import SharedCalls
from iwr_bench.engine.judges import JudgeSet, build_judge_sets, describe_sets
from iwr_bench.engine.layout import RunLayout, replace_session
from iwr_bench.engine.lifecycle import Recorder, run_folder_error
from iwr_bench.engine.limits import Limits, OccupancyReporter
from iwr_bench.engine.lock import RunLock
from iwr_bench.engine.metric_progress import MetricProgressReporter
from iwr_bench.engine.records import INFRA_FAILURES, RunOutcome
from iwr_bench.engine.setup import (
    GeneratorFactory,
    builtin_suite,
    changed_designs,
    check_resumable,
    load_run_tasks,
    opened_generators,
    pool_config,
    preload_libraries,
    run_manifest,
    session_entry,
    session_history,
)
from iwr_bench.engine.stages import PairStages
from iwr_bench.engine.status import StatusReporter
from iwr_bench.engine.store import STORE_NAME, RunFolderError, RunStore
from iwr_bench.engine.summary import run_summary, stored_pairs, stored_task_score
from iwr_bench.engine.task_features import TaskFeatureUse, seed_task_features
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
        self._subscribers = subscribers or []
        self._pool_config = pool_config
        self.clock = WorkClock()
        self.actions_run = 0
        self.store: RunStore | None = None
        self.bus = EventBus()
        self.limits: Limits | None = None
        self.tasks: list[Task] = []
        self.skipped: list[dict[str, Any]] = []
        self.generators: dict[str, Generator] = {}
        self.cancel_scope: anyio.CancelScope | None = None
        self._pairs: dict[tuple[int, str], anyio.CancelScope] = {}
        self.background = Background()
        """Tasks for judge calls and metric batches that their waiters may abandon at a deadline."""
        self.watchdog = Watchdog(self.config.limits.stall_after_s)
        self._occupancy = OccupancyReporter(lambda event: self.bus.publish(event))
        """Occupancy of the limits that changed, published every half second."""
        self._text = TextCoalescer(lambda event: self.bus.publish(event))
        """Streamed judge text, published every 100 ms or 1 KB per job instead of per token."""
        self.status = StatusReporter(lambda event: self.bus.publish(event))
        """What the engine is busy with between job events (model loads, the metrics queue)."""
        self.metric_progress = MetricProgressReporter(lambda event: self.bus.publish(event))
        """Images through the metric stage, their rate and ETA (an event a second at most)."""
        self.task_features = TaskFeatureUse()
        """Reference images the tasks' stored features offered and served (the manifest records it)."""
        self._ticks = 0
        self._lock = lock
        self._own_lock = lock is None
        self.official: OfficialCode | None = None
        """The authors' checkout (``official_code``), read once at start-up."""
        self.judge_sets: dict[str, JudgeSet] = {}
        """The judge set of each design label (``""``: the run's one design), with deadlines."""
        self.shared_calls: SharedCalls | None = None
        """Judge-model answers kept across runs (``[judge] cache``)."""

    # -- set-up (everything that can fail for a user mistake fails here, before any work) -------

    def prepare(self) -> None:
        """Load tasks, build generators and judges, open the store.

        Raises:
            UserError: bad paths, unknown ids, unknown roles, missing API keys, a bad run folder.
        """
        cfg = self.config
        load_plugins(cfg.plugins)  # outside designs register before anything is built
        self.tasks, self.task_source, self.skipped = load_run_tasks(cfg, generate=self.layout.generate)
        self.limits = Limits(
            browser_pages=cfg.limits.browser_pages,
            metric_workers=cfg.limits.metric_workers,
            judge_calls=cfg.limits.judge_calls,
            provider_calls=cfg.limits.providers,
            default_provider_calls=cfg.limits.model_calls,
            report=self._occupancy.changed,
            recover_after=cfg.limits.recover_after_s,
        )
        prompt = load_prompt_file(cfg.prompt_file) if cfg.prompt_file else None
        self.official = OfficialCode.load(cfg.official_code) if cfg.official_code else None
        if self.official is not None:  # the official generation prompt, read from the checkout
            prompt = self.official.generation_prompt()
        layout = self.layout
        self._factory = GeneratorFactory(
            cfg, self.limits, layout.cache_dir, self._model_overrides, prompt, asset_base=layout.asset_base
        )
        self.budget = self._factory.budget
        if layout.generate:  # judging existing pages needs no generator (nor a model's key)
            self.generators = {m.slug: self._factory(m) for m in cfg.models}
        shared = cfg.judge.cache and self._judges_override is None
        self.shared_calls = SharedCalls.default() if shared else None  # opened on first use
        if self._judges_override is not None:
            sets = {"": self._judges_override}
        else:
            sets = build_judge_sets(cfg.judge, self.limits, self._get_call, self._put_call, self.shared_calls)
        seconds = cfg.limits.judge_call_timeout_s
        self.judge_sets = {label: j.with_deadlines(seconds, self.background) for label, j in sets.items()}
        self.judges = next(iter(self.judge_sets.values()))  # (the rubric is the same in every set)
        self.backend = make_backend(cfg)  # where replay and metrics run
        self.backend.connect()
        self._open_store()
        assert self.store is not None
        self.bus = EventBus(self.store)
        for sub in self._subscribers:
            self.bus.subscribe(sub)
        self.recorder = Recorder(self.store, self.bus, self.run_dir, retry_failed=self.retry_failed)
        self.stages = PairStages(
            config=cfg,
            run_dir=self.run_dir,
            layout=layout,
            store=self.store,
            bus=self.bus,
            recorder=self.recorder,
            limits=self.limits,
            judges=self.judge_sets,
            generators=self.generators,
            models=cfg.model_slugs,
            tasks=self.tasks,
            pairs=sum(map(len, cfg.model_tasks([t.id for t in self.tasks]).values())),
            clock=self.clock,
            watchdog=self.watchdog,
            text=self._text,
            agent_sink=self._agent_sink,
            status=self.status,
            backend=self.backend,
        )

    def _open_store(self) -> None:
        """Lock the run folder, then open (or create) its store; the lock is dropped on failure."""
        if self._lock is None:
            self._lock = RunLock(self.run_dir)
        self._lock.acquire()
        try:
            if not self.resume and self.layout.front != "run":
                replace_session(self.run_dir, self.layout.front)  # `iwr judge` / `generate` start over
            if not self.resume and (self.run_dir / STORE_NAME).exists():
                raise UserError(
                    f"{self.run_dir} already holds a run: continue it with `iwr run --resume {self.run_dir}`"
                )
            self.store = RunStore.open_run(self.run_dir)
        except BaseException:
            if self._own_lock:
                self.release_lock()
            raise

    def release_lock(self) -> None:
        """Let another process use the run folder (the engine does so when its run ends)."""
        if self._lock is not None:
            self._lock.release()

    def _get_call(self, key: str) -> str | None:
        return None if self.store is None else self.store.get_call(key)

    def _put_call(self, key: str, role: str, response: str) -> None:
        """Store a paid judge answer and wait until it is on disk (called from a worker thread)."""
        if self.store is not None:
            self.store.put_call(key, role, response)
            self.store.flush()

    def _metrics(self) -> VisualMetrics:
        assert self.limits is not None
        timer = lambda: self.clock.work(StageName.metrics)  # noqa: E731 - the batches' clock
        metrics = self.backend.metrics(self.config, self.limits, timer, self.background, self.judges.rubric)
        self.task_features = seed_task_features(metrics, self.tasks, self.config.metrics)
        self.metric_progress.attach(metrics)
        return metrics

    def _pool(self) -> PoolConfig:
        return self._pool_config or pool_config(self.config)

    def manifest(self, metrics: VisualMetrics | None) -> dict[str, Any]:
        """What the run used: versions, settings, seeds, sampling, backends, judges, policies."""
        manifest = {"front": self.layout.front} | run_manifest(
            self.config,
            self.tasks,
            self.task_source,
            self.skipped,
            self._pool(),
            metrics,
            describe_sets(self.judge_sets),
            self._factory.manifest(),
            self.official,
        )
        features = self.task_features.describe()
        return {
            **manifest,
            "backend": self.backend.describe(),
            "task_features": features,
            **self.front_manifest,
        }

    # -- events ---------------------------------------------------------------------------------

    async def _report_limits(self) -> None:
        while True:
            await anyio.sleep(0.1)
            self._text.flush_due()
            self.metric_progress.flush_due()
            self._ticks += 1
            if self._ticks % 5 == 0 and self.limits is not None:
                self._occupancy.flush(self.limits.all())

    def _agent_sink(self, jid: str, evidence: str) -> Emit:
        def sink(event: AgentEvent) -> None:
            self.watchdog.beat(jid, event)
            if isinstance(event, AgentJudgeDelta):
                self._text.add(jid, event.role, event.text, event.call)
                return
            changes: dict[str, object] = {}
            if isinstance(event, AgentActionExecuted):
                self.actions_run += 1
                if event.screenshot:
                    changes["screenshot"] = f"{evidence}/{event.screenshot}"
            self._text.flush(jid)  # the job's streamed text comes before its next event
            self.bus.publish(from_agent(event, jid, **changes))

        return sink

    # -- the run ----------------------------------------------------------------------------------

    async def run(self) -> RunOutcome:
        """Run (or continue) every pipeline; returns how the session ended.

        Raises:
            UserError: the run folder cannot be written (full disk, read-only); the run stays
                resumable and no job is recorded as failed for it.
        """
        if self.store is None:
            self.prepare()
        assert self.limits is not None
        for limit in self.limits.all():
            limit.reset_clock()
        self.status.start()
        self.metric_progress.start()
        try:
            return await self._run()
        finally:
            self.metric_progress.stop()
            self.status.stop()
            if self.shared_calls is not None:
                self.shared_calls.close()
            if self._own_lock:
                self.release_lock()

    async def _begin(self) -> VisualMetrics | None:
        """Check the folder, record the manifest and the session's start; the metrics to use."""
        assert self.store is not None and self.limits is not None
        store = self.store
        previous = store.meta("status")
        if previous is not None and not self.resume:
            raise UserError(
                f"{self.run_dir} already holds a run: continue it with `iwr run --resume {self.run_dir}`"
            )
        metrics = None
        if self.stages.judging_left():  # nothing left to judge: no metric, no torch import, no browser
            metrics = await anyio.to_thread.run_sync(self._metrics)  # builds no model (they load lazily)
            await anyio.to_thread.run_sync(preload_libraries)
        manifest = self.manifest(metrics)
        session = int(store.meta("sessions") or 0) + 1
        now = datetime.now(UTC).isoformat()
        entry = session_entry(session, now, manifest)
        if previous is None:
            store.set_manifest({**manifest, "created": now, "sessions": [entry]})
        else:
            old = store.manifest()
            check_resumable(old, manifest)
            changed = changed_designs(old, manifest)
            if changed and not self.accept_changed_plugins:
                raise UserError(
                    "cannot resume: the code of a judge design changed since the last session: "
                    + "; ".join(changed)
                    + " (--accept-changed-plugins goes on with the new code and records the change)"
                )
            if changed:
                entry["changed_designs"] = changed
            store.set_manifest({"sessions": [*session_history(old), entry], **self.front_manifest})
        store.set_meta("sessions", session)
        store.set_meta("status", "running")
        self.bus.publish(
            RunStarted(
                run_id=self.run_dir.name,
                models=self.config.model_slugs,
                tasks=[t.id for t in self.tasks],
                model_tasks=_own_tasks(self.config, [t.id for t in self.tasks]),
                resumed=previous is not None,
                limits={lim.name: lim.capacity for lim in self.limits.all()},
                designs=[label for label in self.judge_sets if label],
            )
        )
        return metrics

    async def _run(self) -> RunOutcome:
        assert self.store is not None and self.limits is not None
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
            self._text.flush()
            self.metric_progress.flush()
            self._occupancy.flush(self.limits.all())
            if self.task_features.roles:  # this session built metrics: what the task features served
                self.store.set_manifest({"task_features": self.task_features.describe()})
            self.bus.publish(RunFinished(status=status, wall_s=round(wall, 3), message=message))  # type: ignore[arg-type]
            self.store.set_meta("status", status)
            await anyio.to_thread.run_sync(self.store.flush)  # every queued write is in the store
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
            actions=self.actions_run,
            message=message,
            limit_idle_s={lim.name: round(lim.idle_s, 3) for lim in self.limits.all()},
        )

    async def _work(self, scope: anyio.CancelScope, metrics: VisualMetrics | None) -> None:
        """Open the browsers, models and judges the work left needs, then run every pair beside the
        run's watchers."""
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.background)  # closed last
            if self.stages.judging_left():
                with self.clock.work(StageName.replay):  # starting Chromium is browser time
                    await stack.enter_async_context(self.backend.open(self._pool()))
                for judges in self.judge_sets.values():
                    await stack.enter_async_context(judges)
            await stack.enter_async_context(opened_generators(self.generators))
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._report_limits)
                tg.start_soon(watch_control, self.run_dir, self.cancel_job)
                tg.start_soon(watch_signals, scope)
                tg.start_soon(self.watchdog.run)
                async with anyio.create_task_group() as work:
                    pairs = self.config.model_tasks([t.id for t in self.tasks])
                    for task in self.tasks:
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
        with anyio.CancelScope() as scope:
            self._pairs[(task.id, slug)] = scope
            try:
                result = await self.stages.generate(task, slug) if self.layout.generate else None
                if self.layout.judge:
                    await self.stages.judge(task, slug, result, metrics)
            finally:
                del self._pairs[(task.id, slug)]
        if scope.cancelled_caught:
            self.recorder.cancelled(task.id, slug, self.stages.judged_names(slug))


def _own_tasks(config: RunConfig, task_ids: list[int]) -> dict[str, list[int]]:
    """The models judged on some of the run's tasks only, with those tasks."""
    every = config.model_tasks(task_ids)
    return {slug: ids for slug, ids in every.items() if ids != task_ids}
