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
from collections.abc import Generator as Gen
from contextlib import AsyncExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from iwr_bench.agents.generation import GenerationResult, Generator, read_record
from iwr_bench.agents.generation.prompt import load_prompt_file
from iwr_bench.agents.judge.evaluate import (
    Evaluation,
    VisualMetrics,
    assemble,
    rubric_stage,
    write_evaluation,
)
from iwr_bench.agents.judge.executor import Executor, ExecutorConfig
from iwr_bench.agents.judge.records import ActionRecord, Replay
from iwr_bench.agents.judge.rubric import RubricResult
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.backends.base import ExecutorFactory, make_backend
from iwr_bench.engine.clock import StageName, WorkClock
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.control import request_cancel, watch_control, watch_signals
from iwr_bench.engine.deadlines import Background
from iwr_bench.engine.events import (
    Event,
    EventBus,
    GenerationFinished,
    JudgeDelta,
    LimitOccupancy,
    RunFinished,
    RunStarted,
    StageFinished,
    TextCoalescer,
    from_agent,
)
from iwr_bench.engine.jobs import GenerateJob, execute_generate, record_digest
from iwr_bench.engine.judges import JudgeSet, build_judges
from iwr_bench.engine.lifecycle import JobHandle, Recorder, run_folder_error
from iwr_bench.engine.limits import Limits, NamedLimit
from iwr_bench.engine.lock import RunLock
from iwr_bench.engine.records import INFRA_FAILURES, FailureClass, JobStatus
from iwr_bench.engine.setup import (
    GeneratorFactory,
    builtin_suite,
    check_resumable,
    load_run_tasks,
    opened_generators,
    pool_config,
    preload_libraries,
    run_manifest,
)
from iwr_bench.engine.store import STORE_NAME, RunFolderError, RunStore, job_id
from iwr_bench.engine.summary import run_summary, stored_pairs, stored_task_score
from iwr_bench.engine.watch import JobWatch, Watchdog
from iwr_bench.errors import UserError
from iwr_bench.registry import load_plugins
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


@dataclass
class RunOutcome:
    """How a run session ended."""

    status: str
    """completed, cancelled or failed."""
    run_dir: Path
    wall_s: float
    overhead_s: float
    """Wall time with no stage's work in progress (the engine's own overhead)."""
    work_s: dict[str, float]
    """Busy time of each stage (generate, replay, metrics, rubric, record): wall time with some of
    that stage's work in progress."""
    actions: int
    """Actions replayed in this session."""
    message: str = ""
    limit_idle_s: dict[str, float] = field(default_factory=dict[str, float])
    """Per named limit, the wall time nobody held it."""


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
    ) -> None:
        self.config = config.with_defaults()
        self.run_dir = run_dir
        self.resume = resume
        self.retry_failed = retry_failed
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
        self._dirty: set[str] = set()
        self._pairs: dict[tuple[int, str], anyio.CancelScope] = {}
        self.background = Background()
        """Tasks for judge calls and metric batches that their waiters may abandon at a deadline."""
        self.watchdog = Watchdog(self.config.limits.stall_after_s)
        self._text = TextCoalescer(lambda event: self.bus.publish(event))
        """Streamed judge text, published every 100 ms or 1 KB per job instead of per token."""
        self._ticks = 0
        self._lock = lock
        self._own_lock = lock is None

    # -- set-up (everything that can fail for a user mistake fails here, before any work) -------

    def prepare(self) -> None:
        """Load tasks, build generators and judges, open the store.

        Raises:
            UserError: bad paths, unknown ids, unknown roles, missing API keys, a bad run folder.
        """
        cfg = self.config
        load_plugins(cfg.plugins)  # outside designs register before anything is built
        self.tasks, self.task_source, self.skipped = load_run_tasks(cfg)
        self.limits = Limits(
            browser_pages=cfg.limits.browser_pages,
            metric_workers=cfg.limits.metric_workers,
            judge_calls=cfg.limits.judge_calls,
            provider_calls=cfg.limits.providers,
            default_provider_calls=cfg.limits.model_calls,
            report=self._limit_changed,
            recover_after=cfg.limits.recover_after_s,
        )
        prompt = load_prompt_file(cfg.prompt_file) if cfg.prompt_file else None
        cache = self.run_dir / "cache" / "responses"
        self._factory = GeneratorFactory(cfg, self.limits, cache, self._model_overrides, prompt)
        self.budget = self._factory.budget
        self.generators = {m.slug: self._factory(m) for m in cfg.models}
        judges = self._judges_override or build_judges(cfg.judge, self.limits, self._get_call, self._put_call)
        self.judges = judges.with_deadlines(cfg.limits.judge_call_timeout_s, self.background)
        self.backend = make_backend(cfg)  # where replay and metrics run
        self.backend.connect()
        self._open_store()
        assert self.store is not None
        self.bus = EventBus(self.store)
        for sub in self._subscribers:
            self.bus.subscribe(sub)
        self.recorder = Recorder(self.store, self.bus, self.run_dir, retry_failed=self.retry_failed)

    def _open_store(self) -> None:
        """Lock the run folder, then open (or create) its store; the lock is dropped on failure."""
        if self._lock is None:
            self._lock = RunLock(self.run_dir)
        self._lock.acquire()
        try:
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
        if self.store is not None:
            self.store.put_call(key, role, response)

    def _note_sent(self, slug: str, result: GenerationResult) -> None:
        """Record in the manifest what the model's requests really carried (first answer per model)."""
        assert self.store is not None
        sent: dict[str, Any] = dict(self.store.manifest().get("sent_settings") or {})
        if result.sent is not None and slug not in sent:
            sent[slug] = result.sent.model_dump(mode="json", exclude={"fields"})
            self.store.set_manifest({"sent_settings": sent})

    def _metrics(self) -> VisualMetrics:
        assert self.limits is not None
        timer = lambda: self.clock.work(StageName.metrics)  # noqa: E731 - the batches' clock
        return self.backend.metrics(self.config, self.limits, timer, self.background, self.judges.rubric)

    def _pool(self) -> PoolConfig:
        return self._pool_config or pool_config(self.config)

    def manifest(self, metrics: VisualMetrics) -> dict[str, Any]:
        """What the run used: versions, settings, seeds, sampling, backends, judges, policies."""
        manifest = run_manifest(
            self.config,
            self.tasks,
            self.task_source,
            self.skipped,
            self._pool(),
            metrics,
            self.judges,
            self._factory.manifest(),
        )
        return {**manifest, "backend": self.backend.describe()}

    # -- events ---------------------------------------------------------------------------------

    def _limit_changed(self, limit: NamedLimit) -> None:
        self._dirty.add(limit.name)

    async def _report_limits(self) -> None:
        while True:
            await anyio.sleep(0.1)
            self._text.flush_due()
            self._ticks += 1
            if self._ticks % 5 == 0:
                self._flush_limits()

    def _flush_limits(self) -> None:
        assert self.limits is not None
        for limit in self.limits.all():
            if limit.name in self._dirty:
                self.bus.publish(
                    LimitOccupancy(
                        name=limit.name, in_use=limit.in_use, capacity=limit.capacity, waiting=limit.waiting
                    )
                )
        self._dirty.clear()

    def _agent_sink(self, jid: str, evidence: str) -> Callable[[str, dict[str, object]], None]:
        def sink(kind: str, data: dict[str, object]) -> None:
            self.watchdog.beat(jid, kind, data)
            if kind == "action_finished" and data.get("screenshot"):
                data = {**data, "screenshot": f"{evidence}/{data['screenshot']}"}
            if kind == "action_finished":
                self.actions_run += 1
            event = from_agent(kind, data, jid)
            if isinstance(event, JudgeDelta):
                self._text.add(jid, event.role, event.text)
            elif event is not None:
                self._text.flush(jid)  # the job's streamed text comes before its next event
                self.bus.publish(event)

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
        try:
            return await self._run()
        finally:
            if self._own_lock:
                self.release_lock()

    async def _begin(self) -> VisualMetrics:
        """Check the folder, record the manifest and the session's start; the metrics to use."""
        assert self.store is not None and self.limits is not None
        store = self.store
        previous = store.meta("status")
        if previous is not None and not self.resume:
            raise UserError(
                f"{self.run_dir} already holds a run: continue it with `iwr run --resume {self.run_dir}`"
            )
        metrics = await anyio.to_thread.run_sync(self._metrics)  # builds no model (they load lazily)
        await anyio.to_thread.run_sync(preload_libraries)
        manifest = self.manifest(metrics)
        if previous is None:
            store.set_manifest({**manifest, "created": datetime.now(UTC).isoformat()})
        else:
            check_resumable(store.manifest(), manifest)
        store.set_meta("sessions", int(store.meta("sessions") or 0) + 1)
        store.set_meta("status", "running")
        self.bus.publish(
            RunStarted(
                run_id=self.run_dir.name,
                models=self.config.model_slugs,
                tasks=[t.id for t in self.tasks],
                resumed=previous is not None,
                limits={lim.name: lim.capacity for lim in self.limits.all()},
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
            self._flush_limits()
            self.bus.publish(RunFinished(status=status, wall_s=round(wall, 3), message=message))  # type: ignore[arg-type]
            self.store.set_meta("status", status)
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

    async def _work(self, scope: anyio.CancelScope, metrics: VisualMetrics) -> None:
        """Open the browsers, models and judges, then run every pair beside the run's watchers."""
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.background)  # closed last
            with self.clock.work(StageName.replay):  # starting Chromium is browser time
                await stack.enter_async_context(self.backend.open(self._pool()))
            await stack.enter_async_context(opened_generators(self.generators))
            await stack.enter_async_context(self.judges)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._report_limits)
                tg.start_soon(watch_control, self.run_dir, self.cancel_job)
                tg.start_soon(watch_signals, scope)
                tg.start_soon(self.watchdog.run)
                async with anyio.create_task_group() as work:
                    for task in self.tasks:
                        for slug in self.generators:
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

    async def _pipeline(self, task: Task, slug: str, metrics: VisualMetrics) -> None:
        with anyio.CancelScope() as scope:
            self._pairs[(task.id, slug)] = scope
            try:
                result = await self._generate(task, slug)
                await self._judge(task, slug, result, metrics)
            finally:
                del self._pairs[(task.id, slug)]
        if scope.cancelled_caught:
            self.recorder.cancelled(task.id, slug)

    @contextmanager
    def _stage(self, jid: str, stage: StageName, *, clocked: bool = True) -> Gen[None]:
        """One stage of a job: on the work clock (unless ``clocked`` is False) and as an event."""
        started, start = time.time(), time.perf_counter()
        with self.clock.work(stage) if clocked else nullcontext():
            yield
        seconds = round(time.perf_counter() - start, 3)
        self.bus.publish(StageFinished(job=jid, stage=stage.value, started=started, seconds=seconds))

    def _rank(self, task_id: int, slug: str) -> tuple[int, int]:
        """Order of a pair for the browser pages: by task, then by model (models interleave)."""
        return [t.id for t in self.tasks].index(task_id), list(self.generators).index(slug)

    # -- the generate stage ------------------------------------------------------------------------

    async def _generate(self, task: Task, slug: str) -> GenerationResult | None:
        jid, todo = self.recorder.open("gen", task.id, slug)
        pages = self.run_dir / "pages"
        if not todo:
            self.recorder.skipped(jid, "gen", task.id, slug)
            try:
                return read_record(pages / str(task.id) / slug)
            except (OSError, ValueError):
                return None
        job = GenerateJob(
            id=jid,
            task_id=task.id,
            task_dir=str(task.folder),
            record_sha256=record_digest(task),
            model=slug,
            pages_root=str(pages),
        )
        limit_s = self.config.limits.generation_timeout_s
        result: GenerationResult | None = None
        with self.recorder.job("gen", task.id, slug, error_class=FailureClass.generation_error) as handle:
            handle.started()
            with self._stage(jid, StageName.generate), anyio.move_on_after(limit_s):
                result = await execute_generate(job, task, self.generators[slug])
            if result is None:
                message = f"generation took over {limit_s:g} s ([limits] generation_timeout_s)"
                handle.fail(FailureClass.timeout, message)
            else:
                self._generated(handle, result)
        return result

    def _generated(self, handle: JobHandle, result: GenerationResult) -> None:
        failed = result.status == "failed"
        failure = f"{FailureClass.generation_error}:{result.error.kind}" if failed and result.error else None
        self._note_sent(handle.model, result)
        self.bus.publish(
            GenerationFinished(
                job=handle.id,
                task_id=handle.task_id,
                model=handle.model,
                status=result.status,
                cache_hit=result.cache_hit,
                attempts=result.attempts,
                cost_usd=result.usage.cost_usd,
            )
        )
        handle.finish(
            JobStatus.failed if failed else JobStatus.done,
            result.model_dump(mode="json"),
            failure=failure or (FailureClass.generation_error if failed else None),
            message=result.error.message if failed and result.error else "",
            cost_usd=result.paid_usd,
        )

    # -- the judging stages: replay, metrics, rubric, record ----------------------------------------

    async def _judge(
        self, task: Task, slug: str, result: GenerationResult | None, metrics: VisualMetrics
    ) -> None:
        assert self.store is not None
        jid, todo = self.recorder.open("judge", task.id, slug)
        if not todo:
            self.recorder.skipped(jid, "judge", task.id, slug)
            return
        out = self.run_dir / "judged" / str(task.id) / slug
        gen = self.store.job(job_id("gen", task.id, slug))
        if gen is not None and gen.status == JobStatus.failed:  # no page to judge: it scores 0
            await self._score_missing_page(task, slug, gen.failure, gen.message, metrics)
            return
        evidence = f"{out.relative_to(self.run_dir).as_posix()}/evidence"
        cfg = self.config.judge
        executor = lambda pool: Executor(  # noqa: E731 - the backend chooses the pool
            pool,
            self.judges.grounder,
            self.judges.assertions,
            ExecutorConfig(
                judge_error_policy=cfg.judge_error_policy,
                undetermined_policy=cfg.undetermined_policy,
                protocol=self.config.protocol,
            ),
            emit=self._agent_sink(jid, evidence),
            policy=self.judges.replay,
            step=self.judges.step,
        )
        gen_failed = result is not None and result.status == "failed"
        with (
            self.watchdog.watching(jid) as watch,
            self.recorder.job("judge", task.id, slug, where=watch.progress.where) as handle,
        ):
            evaluation = await self._replay_then_score(handle, task, executor, metrics, watch)
            self.recorder.evaluation(handle, _rel(self.run_dir, out), evaluation, gen_failed)
        if watch.scope.cancelled_caught and not handle.ended:  # past its deadline, or stopped by the watchdog
            self._judging_stopped(handle, watch)

    def _judging_stopped(self, handle: JobHandle, watch: JobWatch) -> None:
        limits = self.config.limits
        if watch.stalled:
            failure = FailureClass.stalled
            message = f"no progress for {limits.stall_after_s:g} s ({watch.progress.where()})"
        else:
            failure = FailureClass.timeout
            message = f"judging took over {limits.judge_timeout_s:g} s ({watch.progress.where()})"
        handle.fail(failure, message)

    async def _replay_then_score(
        self,
        handle: JobHandle,
        task: Task,
        executor: ExecutorFactory,
        metrics: VisualMetrics,
        watch: JobWatch,
    ) -> Evaluation:
        """Replay (holding a browser page), then the later stages with the page given back."""
        assert self.limits is not None
        out = self.run_dir / "judged" / str(task.id) / handle.model
        page = self.run_dir / "pages" / str(task.id) / handle.model
        async with self.limits.browser.slot(self._rank(task.id, handle.model)):  # round-robin over models
            watch.scope.deadline = anyio.current_time() + self.config.limits.judge_timeout_s
            handle.started()
            with self._stage(handle.id, StageName.replay):
                replay = await self.backend.replay(
                    executor, task, page if page.is_dir() else None, out / "evidence"
                )
                self._text.flush(handle.id)
        return await self._score_stages(handle.id, task, handle.model, replay, out, metrics)

    async def _score_stages(
        self, jid: str, task: Task, slug: str, replay: Replay, out: Path, metrics: VisualMetrics
    ) -> Evaluation:
        """The stages after replay: metrics, rubric (with a rubric judge) and record (eval.json)."""
        evidence, protocol = out / "evidence", self.config.protocol
        with self._stage(jid, StageName.metrics, clocked=False):  # the batches clock metrics work
            measured = await self.backend.measure(task, replay, evidence, metrics, protocol)
        answers: list[RubricResult | None] = [None] * len(measured.steps)
        if metrics.rubric is not None:
            with self._stage(jid, StageName.rubric):
                answers = await rubric_stage(metrics.rubric, measured, evidence)
                self._text.flush(jid)
        with self._stage(jid, StageName.record):
            evaluation = assemble(task, slug, replay, measured, answers, metrics.rubric, protocol)
            await anyio.to_thread.run_sync(write_evaluation, evaluation, evidence, out)
        return evaluation

    async def _score_missing_page(
        self, task: Task, slug: str, failure: str | None, message: str, metrics: VisualMetrics
    ) -> None:
        """Record the judging of a page whose generation failed: nothing replayed, no pairs, 0."""
        out = self.run_dir / "judged" / str(task.id) / slug
        with self.recorder.job("judge", task.id, slug) as handle:
            handle.started()
            actions = task.record.action_sequence
            replay = Replay(
                total_steps=len(actions),
                success_steps=0,
                actions=[
                    ActionRecord(index=i, type=a.type, description=a.parameters.description, status="not_run")
                    for i, a in enumerate(actions)
                ],
                failure="no_page",
                message=f"generation failed ({failure or FailureClass.generation_error}): {message}"[:500],
            )
            evaluation = await self._score_stages(handle.id, task, slug, replay, out, metrics)
            self.recorder.evaluation(handle, _rel(self.run_dir, out), evaluation, True)


def _rel(run_dir: Path, path: Path) -> str:
    return path.relative_to(run_dir).as_posix()
