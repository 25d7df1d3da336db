"""The engine: generate and judge every (task, model) pair on one anyio loop, resumably.

Each pair is a small pipeline: its generation job, then at once its judging job (no barrier
between phases: the first pages are judged while later ones are still being generated). Work
waits on named limits (browser pages, model calls per provider, judge calls, metric workers).
Everything is recorded in the run's store as it happens, files first, so a run stopped in any
way continues with ``resume=True``: finished jobs are skipped, answers already paid for are
served from the response cache (generation) and the store (judge models), and the final scores
equal those of a run that was never stopped.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from collections.abc import Generator as Gen
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from iwr_bench.agents.generation import (
    AgentCaller,
    Budget,
    BudgetedCaller,
    CachingCaller,
    GenerationResult,
    Generator,
    LVLMGenerator,
    ModelConfig,
    ResponseCache,
    RetryingCaller,
    RetryPolicy,
    build_model,
    read_record,
)
from iwr_bench.agents.generation.calls import Caller
from iwr_bench.agents.generation.official import describe, for_protocol
from iwr_bench.agents.generation.prompt import PromptFile, load_prompt_file
from iwr_bench.agents.judge.evaluate import Evaluation, VisualMetrics, evaluate
from iwr_bench.agents.judge.executor import Executor, ExecutorConfig
from iwr_bench.agents.judge.records import ActionRecord, Replay, undetermined_rate
from iwr_bench.dataset.frames import DEFAULT_FPS, DEFAULT_FRAME_CAP
from iwr_bench.dataset.layout import Task, load_tasks, unreadable
from iwr_bench.engine.batching import BatchingMetric
from iwr_bench.engine.config import RunConfig, generator_design, is_baseline, provider_of
from iwr_bench.engine.deadlines import Background, Progress, StepTimeout, find_error, tracking
from iwr_bench.engine.events import (
    Event,
    EventBus,
    FailureEvent,
    GenerationFinished,
    JobFinished,
    JobQueued,
    JobStarted,
    LimitOccupancy,
    MetricComputed,
    RunFinished,
    RunStarted,
    Stage,
    from_agent,
)
from iwr_bench.engine.jobs import (
    GenerateJob,
    JudgeJob,
    execute_generate,
    execute_judge,
    page_digest,
    record_digest,
)
from iwr_bench.engine.judges import JudgeSet, build_judges
from iwr_bench.engine.limits import LimitedCaller, Limits, NamedLimit
from iwr_bench.engine.lock import RunLock
from iwr_bench.engine.store import STORE_NAME, RunFolderError, RunStore, ScoreRow, folder_error, job_id
from iwr_bench.errors import UserError
from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.pair import CachedMetric, PairMetric
from iwr_bench.metrics.scoring import PairScore, TaskScore
from iwr_bench.protocol import EvalProtocol
from iwr_bench.registry import build, create, load_plugins
from iwr_bench.tools.jail import containment_level
from iwr_bench.tools.models import Limits as PageLimits
from iwr_bench.tools.models import SettleConfig
from iwr_bench.tools.pool import PagePool, PoolConfig

log = logging.getLogger(__name__)

INFRA_FAILURES = frozenset(
    {"no_page", "page_load_failed", "page_crashed", "timeout", "stalled", "judge_error"}
)
"""Failure classes that are not the model's mistake (counted apart in summaries)."""

PACKAGES = (
    "iwr-bench",
    "anyio",
    "browser-use",
    "pydantic-ai-slim",
    "pydantic",
    "aiohttp",
    "imagehash",
    "open_clip_torch",
    "torch",
    "torchvision",
    "transformers",
    "easyocr",
    "textual",
    "av",
)


def builtin_suite() -> Path:
    """The built-in suite's ``data.jsonl``."""
    return Path(__file__).resolve().parent.parent / "suites" / "sample" / "data.jsonl"


@dataclass
class WorkClock:
    """Measures how much wall time had browser, model or metric work in progress.

    The engine's own overhead is the wall time during which none was in progress.
    """

    active: int = 0
    covered: float = 0.0
    since: float = 0.0
    by_kind: dict[str, float] = field(default_factory=dict[str, float])

    @contextmanager
    def work(self, kind: str) -> Gen[None]:
        """Mark a stretch of ``kind`` work (browser, model, metric)."""
        start = time.perf_counter()
        if self.active == 0:
            self.since = start
        self.active += 1
        try:
            yield
        finally:
            end = time.perf_counter()
            self.active -= 1
            self.by_kind[kind] = self.by_kind.get(kind, 0.0) + end - start
            if self.active == 0:
                self.covered += end - self.since


@dataclass
class JobWatch:
    """A running judging job as the watchdog sees it."""

    progress: Progress
    """Its last sign of life and where it is."""
    scope: anyio.CancelScope
    """Cancelled at the job's deadline, or by the watchdog."""
    stalled: bool = False
    """The watchdog stopped it."""


@dataclass
class RunOutcome:
    """How a run session ended."""

    status: str
    """completed, cancelled or failed."""
    run_dir: Path
    wall_s: float
    overhead_s: float
    """Wall time with no browser, model or metric work in progress."""
    work_s: dict[str, float]
    """Time in each kind of work (summed over concurrent jobs)."""
    actions: int
    """Actions replayed in this session."""
    message: str = ""


def package_versions() -> dict[str, str]:
    """Versions of the packages that shape results."""
    out: dict[str, str] = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def chromium_version() -> str:
    """``chromium --version``, or why it is unknown."""
    binary = os.environ.get("IWR_CHROMIUM", "/usr/bin/chromium")
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"
    return (done.stdout or done.stderr).strip() or "unknown"


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
        self._stored_scores: dict[str, ScoreRow] | None = None
        self.background = Background()
        """Tasks for judge calls and metric batches that their waiters may abandon at a deadline."""
        self._watched: dict[str, JobWatch] = {}
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
        source = builtin_suite() if cfg.tasks == "builtin" else Path(cfg.tasks).expanduser()
        if not source.exists():
            raise UserError(f"tasks: {source} does not exist")
        task_set = load_tasks(source)
        self.skipped = [
            p.model_dump(mode="json") for p in unreadable(task_set, skip_invalid=cfg.skip_invalid)
        ]
        tasks = task_set.tasks
        if cfg.only:
            known = {t.id for t in tasks}
            missing = sorted(set(cfg.only) - known)
            if missing:
                raise UserError(f"task id(s) not in {source}: {', '.join(map(str, missing))}")
            tasks = [t for t in tasks if t.id in set(cfg.only)]
        if not tasks:
            raise UserError(f"{source} holds no readable task (run `iwr tasks validate {source}`)")
        self.tasks = tasks
        self.task_source = source
        self.limits = Limits(
            browser_pages=cfg.limits.browser_pages,
            metric_workers=cfg.limits.metric_workers,
            judge_calls=cfg.limits.judge_calls,
            provider_calls=cfg.limits.providers,
            default_provider_calls=cfg.limits.model_calls,
            report=self._limit_changed,
            recover_after=cfg.limits.recover_after_s,
        )
        self.budget = Budget(cfg.budget_usd or None)
        self.generators = {m.slug: self._build_generator(m) for m in cfg.models}
        judges = self._judges_override or build_judges(cfg.judge, self.limits, self._get_call, self._put_call)
        self.judges = judges.with_deadlines(cfg.limits.judge_call_timeout_s, self.background)
        self._open_store()
        self.bus = EventBus(self.store)
        for sub in self._subscribers:
            self.bus.subscribe(sub)

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

    @functools.cached_property
    def _prompt(self) -> PromptFile | None:
        return load_prompt_file(self.config.prompt_file) if self.config.prompt_file else None

    def _build_generator(self, m: ModelConfig) -> Generator:
        design = generator_design(m)
        if design is not None and m.slug not in self._model_overrides:
            generator, _ = build("generator", design[0], design[1])
            return generator
        assert self.limits is not None
        protocol = self.config.protocol
        m, preset = for_protocol(m, protocol)
        model = self._model_overrides.get(m.slug) or build_model(m)
        limit = self.limits.provider(provider_of(m))
        policy = RetryPolicy(retries=m.retries, attempt_timeout=m.timeout * 1.5 + 5)
        caller: Caller = RetryingCaller(LimitedCaller(AgentCaller(model, price=m.price), limit), policy)
        caller = BudgetedCaller(caller, self.budget)
        caller = CachingCaller(caller, ResponseCache(self.run_dir / "cache" / "responses"))
        return LVLMGenerator(m, caller, model=model, protocol=protocol, preset=preset, prompt=self._prompt)

    def _generation_manifest(self) -> dict[str, Any]:
        """Protocol, prompt file, and per model the preset and settings in effect."""
        protocol, prompt = self.config.protocol, self._prompt
        models = [m for m in self.config.models if not is_baseline(m) or m.slug in self._model_overrides]
        return {
            "protocol": protocol.value,
            "prompt_file": prompt.path if prompt else None,
            "prompt_file_sha256": prompt.sha256 if prompt else None,
            "models": {m.slug: describe(m, *for_protocol(m, protocol)) for m in models},
        }

    def _note_sent(self, slug: str, result: GenerationResult) -> None:
        """Record in the manifest what the model's requests really carried (first answer per model)."""
        assert self.store is not None
        sent: dict[str, Any] = dict(self.store.manifest().get("sent_settings") or {})
        if result.sent is not None and slug not in sent:
            sent[slug] = result.sent.model_dump(mode="json", exclude={"fields"})
            self.store.set_manifest({"sent_settings": sent})

    def _metrics(self) -> VisualMetrics:
        assert self.limits is not None
        cfg = self.config.metrics
        cache = MetricCache.default(cfg.cache_dir or None) if cfg.cache else None
        ocr, _ = create(
            "metric", "ocr", device=cfg.device, cache_dir=(cfg.cache_dir or "") if cfg.cache else None
        )
        dino, _ = create(
            "metric",
            "dino",
            model=cfg.dino,
            device=cfg.device,
            fallback="effnet-lite0" if cfg.dino_fallback else None,
        )
        limit = self.limits.metric

        def wrap(metric: PairMetric) -> PairMetric:
            return BatchingMetric(
                CachedMetric(metric, cache),
                limit,
                timer=self.clock.work,
                timeout=self.config.limits.metric_timeout_s,
                background=self.background,
            )

        extra: dict[str, Any] = {} if self.judges.rubric is None else {"rubric": self.judges.rubric}
        return VisualMetrics(ocr=wrap(ocr), dino=wrap(dino), **extra)

    def manifest(self, metrics: VisualMetrics) -> dict[str, Any]:
        """What the run used: versions, settings, seeds, sampling, backends, judges, policies."""
        pool = self._pool()
        return {
            "config": self.config.model_dump(mode="json"),
            "tasks_source": str(self.task_source),
            "task_ids": [t.id for t in self.tasks],
            "skipped_records": self.skipped,
            "task_digests": {str(t.id): record_digest(t) for t in self.tasks},
            "models": self.config.model_slugs,
            "packages": package_versions(),
            "python": sys.version.split()[0],
            "os": platform.platform(),
            "chromium": chromium_version(),
            "browser": {
                "settle": pool.settle.model_dump(mode="json"),
                "determinism": pool.determinism.model_dump(mode="json"),
                "limits": pool.limits.model_dump(mode="json"),
                "isolation": pool.isolation,
                "containment": containment_level(),
            },
            "frame_sampling": {"fps": DEFAULT_FPS, "frame_cap": DEFAULT_FRAME_CAP},
            "generation": self._generation_manifest(),
            "metric_backends": [metrics.ocr.backend.model_dump(), metrics.dino.backend.model_dump()],
            "judges": self.judges.describe(),
            "policies": {
                "judge_error": self.config.judge.judge_error_policy,
                "undetermined": self.config.judge.undetermined_policy,
            },
        }

    def _pool(self) -> PoolConfig:
        if self._pool_config is not None:
            return self._pool_config
        b = self.config.browser
        return PoolConfig(
            size=self.config.limits.browser_pages,
            settle=SettleConfig(mode="fixed" if self.config.protocol == EvalProtocol.official else b.settle),
            limits=PageLimits(action_timeout=b.action_timeout_s, load_timeout=b.load_timeout_s),
        )

    # -- events ---------------------------------------------------------------------------------

    def _limit_changed(self, limit: NamedLimit) -> None:
        self._dirty.add(limit.name)

    async def _report_limits(self) -> None:
        assert self.limits is not None
        while True:
            await anyio.sleep(0.5)
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
            watch = self._watched.get(jid)
            if watch is not None:
                watch.progress.beat(_action_label(data) if kind == "action_started" else None)
            if kind == "action_finished" and data.get("screenshot"):
                data = {**data, "screenshot": f"{evidence}/{data['screenshot']}"}
            if kind == "action_finished":
                self.actions_run += 1
            event = from_agent(kind, data, jid)
            if event is not None:
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
        try:
            return await self._run()
        finally:
            if self._own_lock:
                self.release_lock()

    async def _run(self) -> RunOutcome:
        assert self.store is not None and self.limits is not None
        store = self.store
        started = time.perf_counter()
        previous = store.meta("status")
        if previous is not None and not self.resume:
            raise UserError(
                f"{self.run_dir} already holds a run: continue it with `iwr run --resume {self.run_dir}`"
            )
        with self.clock.work("metric"):
            metrics = await anyio.to_thread.run_sync(self._metrics)
        manifest = self.manifest(metrics)
        if previous is None:
            store.set_manifest({**manifest, "created": datetime.now(UTC).isoformat()})
        else:
            self._check_resumable(store.manifest(), manifest)
        sessions = int(store.meta("sessions") or 0) + 1
        store.set_meta("sessions", sessions)
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
        status, message = "cancelled", "stopped before the end; resumable"  # until the work returns
        wall = 0.0
        stopped: RunFolderError | None = None
        try:
            with anyio.CancelScope() as scope:
                self.cancel_scope = scope
                async with AsyncExitStack() as stack:
                    await stack.enter_async_context(self.background)  # closed last
                    with self.clock.work("browser"):  # starting Chromium is browser time
                        pool = await stack.enter_async_context(PagePool(self._pool()))
                    for generator in self.generators.values():
                        if isinstance(generator, LVLMGenerator):
                            await stack.enter_async_context(generator)
                    await stack.enter_async_context(self.judges)
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._report_limits)
                        tg.start_soon(self._watch_control)
                        tg.start_soon(self._watch_signals, scope)
                        tg.start_soon(self._watchdog)
                        async with anyio.create_task_group() as work:
                            for task in self.tasks:
                                for slug in self.generators:
                                    work.start_soon(self._pipeline, task, slug, pool, metrics)
                        tg.cancel_scope.cancel()
            status, message = "completed", ""
            if scope.cancelled_caught:
                status, message = "cancelled", "stopped by a signal; resumable"
        except Exception as exc:
            stopped = _folder_error(self.run_dir, exc)
            status, message = "failed", str(stopped) if stopped else f"{type(exc).__name__}: {exc}"
            if stopped is None:
                log.exception("run failed")
        finally:
            wall = time.perf_counter() - started
            try:
                self._flush_limits()
                self.bus.publish(RunFinished(status=status, wall_s=round(wall, 3), message=message))  # type: ignore[arg-type]
                store.set_meta("status", status)
            except RunFolderError as exc:  # the disk filled up at the very end: still resumable
                stopped = stopped or exc
        if stopped is not None:
            raise stopped
        return RunOutcome(
            status=status,
            run_dir=self.run_dir,
            wall_s=wall,
            overhead_s=max(0.0, wall - self.clock.covered),
            work_s=dict(self.clock.by_kind),
            actions=self.actions_run,
            message=message,
        )

    async def _watch_signals(self, scope: anyio.CancelScope) -> None:
        try:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    scope.cancel()
                    return
        except (NotImplementedError, ValueError, RuntimeError):  # not the main thread, or no signals here
            await anyio.sleep_forever()

    async def _watchdog(self) -> None:
        """Fail judging jobs that show no sign of life (see ``[limits] stall_after_s``)."""
        after = self.config.limits.stall_after_s
        while True:
            await anyio.sleep(min(1.0, after / 4))
            now = time.monotonic()
            for watch in list(self._watched.values()):
                if not watch.stalled and watch.progress.stalled(now, after):
                    watch.stalled = True
                    watch.scope.cancel()

    @contextmanager
    def _watching(self, jid: str) -> Gen[JobWatch]:
        """Run a judging job's body under its deadline and the watchdog's eye."""
        seconds = self.config.limits.judge_timeout_s
        progress = Progress()
        with anyio.CancelScope(deadline=anyio.current_time() + seconds) as scope, tracking(progress):
            watch = JobWatch(progress, scope)
            self._watched[jid] = watch
            try:
                yield watch
            finally:
                del self._watched[jid]

    def cancel(self) -> None:
        """Stop the run cleanly (it stays resumable)."""
        if self.cancel_scope is not None:
            self.cancel_scope.cancel()

    @staticmethod
    def _check_resumable(old: dict[str, Any], new: dict[str, Any]) -> None:
        for key in ("task_digests", "models"):
            if old.get(key) != new.get(key):
                raise UserError(f"cannot resume: the run's {key.replace('_', ' ')} changed since it started")

    # -- one (task, model) pair ------------------------------------------------------------------

    async def _pipeline(self, task: Task, slug: str, pool: PagePool, metrics: VisualMetrics) -> None:
        with anyio.CancelScope() as scope:
            self._pairs[(task.id, slug)] = scope
            try:
                result = await self._generate(task, slug)
                await self._judge(task, slug, result, pool, metrics)
            finally:
                del self._pairs[(task.id, slug)]
        if scope.cancelled_caught:
            self._record_cancelled(task.id, slug)

    def _earlier(self, jid: str) -> ScoreRow | None:
        if self._stored_scores is None:
            assert self.store is not None
            self._stored_scores = {row.job: row for row in self.store.scores()}
        return self._stored_scores.get(jid)

    def _earlier_scores(self, jid: str) -> dict[str, float | None] | None:
        """Scores of a job finished in an earlier session (so a resumed run's events carry them)."""
        row = self._earlier(jid)
        if row is None:
            return None
        return {
            "ifs": row.ifs,
            "lvs": row.lvs,
            "hvs": row.hvs,
            "vfs": row.vfs,
            "final": row.final,
            "success_steps": float(row.success_steps),
            "total_steps": float(row.total_steps),
        }

    def _earlier_failure(self, jid: str) -> str | None:
        assert self.store is not None
        job = self.store.job(jid)
        row = self._earlier(jid)
        return (job.failure if job else None) or (row.failure if row else None)

    async def _watch_control(self) -> None:
        """Carry out requests other processes drop in ``<run>/control`` (see :func:`request_cancel`)."""
        folder = self.run_dir / CONTROL_DIR
        while True:
            for path in sorted(folder.glob("cancel-*.json")) if folder.is_dir() else []:
                try:
                    request = json.loads(path.read_text())
                    task_id, model = int(request["task_id"]), str(request["model"])
                except (OSError, ValueError, KeyError, TypeError):
                    log.warning("ignoring a malformed control request %s", path.name)
                    task_id, model = -1, ""
                if task_id >= 0 and not self.cancel_job(task_id, model):
                    log.info("cancel request for %s/%s: not in progress", task_id, model)
                path.unlink(missing_ok=True)
            await anyio.sleep(0.5)

    def cancel_job(self, task_id: int, model: str) -> bool:
        """Stop one (task, model) pair; its running job is recorded as failed (``cancelled``).

        Returns False when that pair is not in progress. ``--resume --retry-failed`` redoes it.
        """
        scope = self._pairs.get((task_id, model))
        if scope is None:
            return False
        scope.cancel()
        return True

    def _record_cancelled(self, task_id: int, slug: str) -> None:
        assert self.store is not None
        stages: tuple[Stage, ...] = ("gen", "judge")
        for stage in stages:
            jid = job_id(stage, task_id, slug)
            row = self.store.job(jid)
            if row is None or row.status in ("done", "failed"):
                continue
            self._fail_job(jid, stage, task_id, slug, "cancelled", "cancelled by the user")

    def _fail_job(
        self,
        jid: str,
        stage: Stage,
        task_id: int,
        slug: str,
        failure: str,
        message: str,
        seconds: float = 0.0,
    ) -> None:
        """Record a job that ended without a result, and publish its failure and its end."""
        assert self.store is not None
        self.store.finish_job(
            jid, status="failed", result=None, failure=failure, message=message, seconds=seconds
        )
        self.bus.publish(FailureEvent(job=jid, stage=stage, failure=failure, message=message))
        self.bus.publish(
            JobFinished(
                job=jid,
                stage=stage,
                task_id=task_id,
                model=slug,
                status="failed",
                failure=failure,
                message=message,
                seconds=round(seconds, 3),
            )
        )

    def _open(self, stage: str, task: Task, slug: str) -> tuple[str, bool]:
        """The job's id, and whether it must run (False: finished before)."""
        assert self.store is not None
        row = self.store.ensure_job(stage, task.id, slug)
        finished = row.status == "done" or (row.status == "failed" and not self.retry_failed)
        if not finished and row.attempts:
            self.store.reopen_job(row.id)
        return row.id, not finished

    async def _generate(self, task: Task, slug: str) -> GenerationResult | None:
        assert self.store is not None
        store = self.store
        jid, todo = self._open("gen", task, slug)
        pages = self.run_dir / "pages"
        folder = pages / str(task.id) / slug
        if not todo:
            self.bus.publish(JobFinished(job=jid, stage="gen", task_id=task.id, model=slug, status="skipped"))
            try:
                return read_record(folder)
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
        self.bus.publish(JobQueued(job=jid, stage="gen", task_id=task.id, model=slug))
        store.start_job(jid)
        self.bus.publish(JobStarted(job=jid, stage="gen", task_id=task.id, model=slug))
        start = time.perf_counter()
        generator = self.generators[slug]
        limit_s = self.config.limits.generation_timeout_s
        result: GenerationResult | None = None
        try:
            with self.clock.work("model"), anyio.move_on_after(limit_s):
                result = await execute_generate(job, task, generator)
        except Exception as exc:  # a generator must not raise; if one does, it is recorded all the same
            stop = _folder_error(self.run_dir, exc)
            if stop is not None:
                raise stop from exc
            log.exception("generator %s raised on task %d", slug, task.id)
            seconds = time.perf_counter() - start
            self._fail_job(jid, "gen", task.id, slug, "generation_error", str(exc), seconds)
            return None
        seconds = time.perf_counter() - start
        if result is None:
            message = f"generation took over {limit_s:g} s ([limits] generation_timeout_s)"
            self._fail_job(jid, "gen", task.id, slug, "timeout", message, seconds)
            return None
        failed = result.status == "failed"
        failure = f"generation_error:{result.error.kind}" if failed and result.error else None
        message = result.error.message if failed and result.error else ""
        store.finish_job(
            jid,
            status="failed" if failed else "done",
            result=result.model_dump(mode="json"),
            failure=failure,
            message=message,
            seconds=seconds,
            cost_usd=result.paid_usd,
        )
        self._note_sent(slug, result)
        self.bus.publish(
            GenerationFinished(
                job=jid,
                task_id=task.id,
                model=slug,
                status=result.status,
                cache_hit=result.cache_hit,
                attempts=result.attempts,
                cost_usd=result.usage.cost_usd,
            )
        )
        if failed:
            self.bus.publish(
                FailureEvent(job=jid, stage="gen", failure=failure or "generation_error", message=message)
            )
        self.bus.publish(
            JobFinished(
                job=jid,
                stage="gen",
                task_id=task.id,
                model=slug,
                status="failed" if failed else "done",
                failure=failure,
                message=message,
                cost_usd=result.paid_usd,
                seconds=round(seconds, 3),
            )
        )
        return result

    async def _judge(
        self, task: Task, slug: str, result: GenerationResult | None, pool: PagePool, metrics: VisualMetrics
    ) -> None:
        assert self.store is not None and self.limits is not None
        store = self.store
        jid, todo = self._open("judge", task, slug)
        if not todo:
            self.bus.publish(
                JobFinished(
                    job=jid,
                    stage="judge",
                    task_id=task.id,
                    model=slug,
                    status="skipped",
                    failure=self._earlier_failure(jid),
                    scores=self._earlier_scores(jid),
                )
            )
            return
        page = self.run_dir / "pages" / str(task.id) / slug
        out = self.run_dir / "judged" / str(task.id) / slug
        rel = out.relative_to(self.run_dir).as_posix()
        gen = store.job(job_id("gen", task.id, slug))
        if gen is not None and gen.status == "failed":  # no page to judge: it scores 0
            await self._score_missing_page(jid, task, slug, gen.failure, gen.message, metrics)
            return
        job = JudgeJob(
            id=jid,
            task_id=task.id,
            task_dir=str(task.folder),
            record_sha256=record_digest(task),
            model=slug,
            page=str(page),
            page_sha256=page_digest(page),
            out=str(out),
        )
        self.bus.publish(JobQueued(job=jid, stage="judge", task_id=task.id, model=slug))
        start = time.perf_counter()
        cfg = self.config.judge
        executor = Executor(
            pool,
            self.judges.grounder,
            self.judges.assertions,
            ExecutorConfig(
                judge_error_policy=cfg.judge_error_policy,
                undetermined_policy=cfg.undetermined_policy,
                protocol=self.config.protocol,
            ),
            emit=self._agent_sink(jid, f"{rel}/evidence"),
            policy=self.judges.replay,
            step=self.judges.step,
        )
        evaluation: Evaluation | None = None
        watch: JobWatch | None = None
        try:
            async with self.limits.browser:
                store.start_job(jid)
                self.bus.publish(JobStarted(job=jid, stage="judge", task_id=task.id, model=slug))
                with self.clock.work("browser"), self._watching(jid) as watch:
                    evaluation = await self._execute_judge(job, task, executor, metrics)
        except Exception as exc:
            stop = _folder_error(self.run_dir, exc)
            if stop is not None:
                raise stop from exc
            seconds = time.perf_counter() - start
            timed_out = find_error(exc, StepTimeout)
            if timed_out is not None:
                where = watch.progress.where() if watch is not None else "judging"
                self._fail_job(jid, "judge", task.id, slug, "timeout", f"{timed_out} ({where})", seconds)
                return
            log.exception("judging %s on task %d failed", slug, task.id)
            message = f"{type(exc).__name__}: {exc}"
            self._fail_job(jid, "judge", task.id, slug, "engine_error", message, seconds)
            return
        seconds = time.perf_counter() - start
        if watch.scope.cancelled_caught:  # its deadline passed, or the watchdog stopped it
            limits = self.config.limits
            if watch.stalled:
                failure = "stalled"
                message = f"no progress for {limits.stall_after_s:g} s ({watch.progress.where()})"
            else:
                failure = "timeout"
                message = f"judging took over {limits.judge_timeout_s:g} s ({watch.progress.where()})"
            self._fail_job(jid, "judge", task.id, slug, failure, message, seconds)
            return
        gen_failed = result is not None and result.status == "failed"
        self._record_evaluation(jid, rel, evaluation, gen_failed, seconds)

    async def _score_missing_page(
        self,
        jid: str,
        task: Task,
        slug: str,
        failure: str | None,
        message: str,
        metrics: VisualMetrics,
    ) -> None:
        """Record the judging of a page whose generation failed: nothing replayed, no pairs, 0."""
        assert self.store is not None
        out = self.run_dir / "judged" / str(task.id) / slug
        self.bus.publish(JobQueued(job=jid, stage="judge", task_id=task.id, model=slug))
        self.store.start_job(jid)
        self.bus.publish(JobStarted(job=jid, stage="judge", task_id=task.id, model=slug))
        start = time.perf_counter()
        actions = task.record.action_sequence
        replay = Replay(
            total_steps=len(actions),
            success_steps=0,
            actions=[
                ActionRecord(index=i, type=a.type, description=a.parameters.description, status="not_run")
                for i, a in enumerate(actions)
            ],
            failure="no_page",
            message=f"generation failed ({failure or 'generation_error'}): {message}"[:500],
        )
        evaluation = await evaluate(task, slug, replay, out / "evidence", out, metrics)
        rel = out.relative_to(self.run_dir).as_posix()
        self._record_evaluation(jid, rel, evaluation, True, time.perf_counter() - start)

    async def _execute_judge(
        self, job: JudgeJob, task: Task, executor: Executor, metrics: VisualMetrics
    ) -> Evaluation:
        return await execute_judge(job, task, executor, metrics)

    def _record_evaluation(
        self, jid: str, rel: str, ev: Evaluation, gen_failed: bool, seconds: float
    ) -> None:
        assert self.store is not None
        store = self.store
        replay = ev.replay
        store.put_actions(jid, [a.model_dump(mode="json") for a in replay.actions], f"{rel}/evidence")
        ocr_b, dino_b = ev.backends[0], ev.backends[1]
        values: list[tuple[int, str, float | None, str, bool]] = []
        for p in ev.score.pairs:  # the pairs that count (the official protocol cuts the list)
            values.append((p.step, "ocr", p.ocr, ocr_b.label, ocr_b.substitute))
            values.append((p.step, "dino", p.dino, dino_b.label, dino_b.substitute))
            if p.hvs is not None:
                values.append((p.step, "rubric", p.hvs, ev.rubric_judge or "rubric", False))
        store.put_metrics(jid, values)
        for step, metric, value, backend, _sub in values:
            self.bus.publish(MetricComputed(job=jid, step=step, metric=metric, value=value, backend=backend))
        failing = next((a for a in replay.actions if a.status == "failed"), None)
        model_failure = replay.failure or (failing.failure if failing else None)
        infra = (
            "generation_error" if gen_failed else (model_failure if model_failure in INFRA_FAILURES else None)
        )
        store.put_score(
            ScoreRow(
                job=jid,
                task_id=ev.task_id,
                model=ev.model,
                total_steps=ev.total_step,
                success_steps=ev.success_step,
                ifs=ev.ifs,
                lvs=ev.lvs,
                hvs=ev.hvs,
                vfs=ev.vfs,
                final=ev.final,
                lvs_only=ev.lvs_only,
                failure=model_failure,
                eval_path=f"{rel}/eval.json",
            )
        )
        summary = {
            "ifs": ev.ifs,
            "lvs": ev.lvs,
            "hvs": ev.hvs,
            "vfs": ev.vfs,
            "final": ev.final,
            "success_steps": float(ev.success_step),
            "total_steps": float(ev.total_step),
        }
        store.finish_job(
            jid,
            status="failed" if infra else "done",
            result={"eval": f"{rel}/eval.json", **summary, "failure": model_failure},
            failure=infra,
            message=replay.message or (failing.message if failing else ""),
            seconds=seconds,
        )
        if infra:
            self.bus.publish(FailureEvent(job=jid, stage="judge", failure=infra, message=replay.message))
        self.bus.publish(
            JobFinished(
                job=jid,
                stage="judge",
                task_id=ev.task_id,
                model=ev.model,
                status="failed" if infra else "done",
                failure=infra or model_failure,
                message=(replay.message or (failing.message if failing else ""))[:500],
                scores=summary,
                seconds=round(seconds, 3),
            )
        )


def _action_label(data: dict[str, object]) -> str:
    """``action 3/8 (Click: Add to cart)`` from an ``action_started`` event."""
    index = data.get("index")
    shown = index + 1 if isinstance(index, int) else "?"
    description = str(data.get("description") or "")[:60]
    return f"action {shown}/{data.get('total', '?')} ({data.get('type', '?')}: {description})"


def _folder_error(run_dir: Path, exc: BaseException) -> RunFolderError | None:
    """The run-folder error inside ``exc`` (a full disk, a read-only folder), if that is what it is."""
    found = find_error(exc, RunFolderError)
    if isinstance(found, RunFolderError):
        return found
    for kind in (OSError, sqlite3.Error):
        inner = find_error(exc, kind)
        if inner is not None:
            return folder_error(run_dir, inner)
    return None


CONTROL_DIR = "control"
"""Folder of a run where other processes leave requests for the running engine."""


def request_cancel(run_dir: Path, task_id: int, model: str) -> Path:
    """Ask the engine running in ``run_dir`` (another process) to cancel one (task, model) pair.

    The request is a small file the engine picks up within a second; it is ignored when that
    pair is not in progress.
    """
    folder = run_dir / CONTROL_DIR
    folder.mkdir(exist_ok=True)
    name = f"cancel-{time.time_ns()}-{task_id}-{model}.json"
    tmp = folder / f".{name}.tmp"
    tmp.write_text(json.dumps({"task_id": task_id, "model": model}))
    return tmp.replace(folder / name)


def stored_pairs(store: RunStore) -> dict[str, dict[int, dict[str, float | None]]]:
    """Job -> scored step -> metric -> value, from the store's metric rows."""
    pairs: dict[str, dict[int, dict[str, float | None]]] = {}
    for jid, step, metric, value, _backend, _sub in store.metrics():
        pairs.setdefault(jid, {}).setdefault(step, {})[metric] = value
    return pairs


def stored_task_score(row: ScoreRow | None, pairs: dict[int, dict[str, float | None]]) -> TaskScore:
    """A judged job's scores rebuilt from its score row and metric values (0 when it has no row)."""
    if row is None:
        return TaskScore(total_steps=1, success_steps=0, pairs=[])
    return TaskScore(
        total_steps=row.total_steps,
        success_steps=row.success_steps,
        pairs=[
            PairScore(step=step, ocr=v.get("ocr") or 0.0, dino=v.get("dino") or 0.0, hvs=v.get("rubric"))
            for step, v in sorted(pairs.items())
        ],
    )


def run_summary(store: RunStore) -> dict[str, Any]:
    """Per-model means (x100) and failure counts of a run, from its store."""
    from iwr_bench.agents.judge.official import aggregate

    manifest = store.manifest()
    protocol = EvalProtocol(manifest.get("config", {}).get("protocol", "default"))
    models: list[str] = manifest.get("models", [])
    task_ids: list[int] = manifest.get("task_ids", [])
    jobs = {j.id: j for j in store.jobs()}
    metrics = stored_pairs(store)
    scores = {s.job: s for s in store.scores()}
    out: dict[str, Any] = {
        "models": {},
        "status": store.meta("status"),
        "skipped_records": len(manifest.get("skipped_records", [])),
    }
    for model in models:
        per_task: list[tuple[TaskScore, bool]] = []
        failures: dict[str, int] = {}
        mistakes: dict[str, int] = {}
        cost = 0.0
        judged = generated = 0
        verdicts: list[str | None] = []
        for tid in task_ids:
            gen = jobs.get(job_id("gen", tid, model))
            judge = jobs.get(job_id("judge", tid, model))
            if gen is not None:
                cost += gen.cost_usd
                generated += gen.status in ("done", "failed")
                if gen.status == "failed" and gen.failure:
                    key = gen.failure.split(":", 1)[0]
                    failures[key] = failures.get(key, 0) + 1
            if judge is None or judge.status not in ("done", "failed"):
                continue
            judged += 1
            verdicts += [(a.get("assertion") or {}).get("verdict") for a in store.actions(judge.id)]
            if judge.failure and judge.failure != "generation_error":
                failures[judge.failure] = failures.get(judge.failure, 0) + 1
            row = scores.get(judge.id)
            # a failed generation counts as no page: the official generator writes none for it
            no_page = (row is not None and row.failure == "no_page") or (
                gen is not None and gen.status == "failed"
            )
            per_task.append((stored_task_score(row, metrics.get(judge.id, {})), no_page))
            if row is not None and row.failure and row.failure not in INFRA_FAILURES:
                mistakes[row.failure] = mistakes.get(row.failure, 0) + 1
        s, left_out, hvs_missing = aggregate(per_task, protocol)
        out["models"][model] = {
            "protocol": protocol.value,
            "left_out": left_out,
            "hvs_missing": hvs_missing,
            "tasks": len(task_ids),
            "generated": generated,
            "judged": judged,
            "ifs": s.ifs if s else None,
            "ifs_micro": s.ifs_micro if s else None,
            "lvs": s.lvs if s else None,
            "hvs": s.hvs if s else None,
            "vfs": s.vfs if s else None,
            "final": s.final if s else None,
            "lvs_only": s.lvs_only if s else True,
            "failures": failures,
            "mistakes": mistakes,
            "undetermined": undetermined_rate(verdicts),
            "cost_usd": round(cost, 6),
        }
    return out


def dump_summary(summary: dict[str, Any]) -> str:
    """The summary as JSON."""
    return json.dumps(summary, indent=2, sort_keys=True)
