"""The stages of one (task, model) pair: generate, then replay, metrics, rubric and record.

A run that compares judge designs (``[[judge.designs]]``) judges each pair's page once per design,
each as a job of its own (``judge/<task>/<model>/<label>``, evaluations under
``judged/<task>/<model>/<label>/``); the page is generated once.

Each stage waits on its own named limit and gives it back as soon as it is done, handing the next
stage data (a page folder, a replay and its evidence folder, measured pairs): the browser page is
released before the metrics start, so while one page's metrics run the browser replays the next.
Every job runs inside :meth:`Recorder.job`, which records its end (or its failure) in the store.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from collections.abc import Generator as Gen
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from iwr_bench.agents.events import Emit, emitting
from iwr_bench.agents.generation import GenerationResult, Generator, read_record
from iwr_bench.agents.judge.executor import Executor, ExecutorConfig
from iwr_bench.agents.judge.records import Replay
from iwr_bench.agents.judge.rubric import RubricResult
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.backends.base import ExecutorFactory, StageBackend
from iwr_bench.engine.bus import EventBus, TextCoalescer
from iwr_bench.engine.clock import StageName, WorkClock
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.events import GenerationFinished, StageFinished
from iwr_bench.engine.jobs import GenerateJob, execute_generate, record_digest
from iwr_bench.engine.judges import JudgeSet
from iwr_bench.engine.layout import RunLayout
from iwr_bench.engine.lifecycle import JobHandle, Recorder
from iwr_bench.engine.limits import Limits
from iwr_bench.engine.records import FailureClass, JobStatus
from iwr_bench.engine.status import StatusReporter
from iwr_bench.engine.store import RunStore, job_id, judged_name
from iwr_bench.engine.watch import JobWatch, Watchdog
from iwr_bench.scoring.evaluation import (
    Evaluation,
    VisualMetrics,
    assemble,
    not_measured,
    rubric_stage,
    write_evaluation,
)

AgentSink = Callable[[str, str], Emit]
"""``sink(job id, evidence folder)``: the callback a judging job's agents report to."""


@dataclass
class PairStages:
    """Runs the stages of (task, model) pairs for one engine session."""

    config: RunConfig
    run_dir: Path
    layout: RunLayout
    """Where pages and evaluations are."""
    store: RunStore
    bus: EventBus
    recorder: Recorder
    limits: Limits
    judges: dict[str, JudgeSet]
    """The judge set of each design label (``""``: the run's one design)."""
    generators: dict[str, Generator]
    """Generators by model slug (empty when the generate stage does not run)."""
    models: list[str]
    """Model slugs, in the run's order."""
    tasks: list[Task]
    pairs: int
    """How many (task, model) pairs the run has (a model may be judged on some tasks only)."""
    clock: WorkClock
    watchdog: Watchdog
    text: TextCoalescer
    """Streamed judge text, flushed at the end of a stage so it comes before the stage's end."""
    agent_sink: AgentSink
    backend: StageBackend
    """Where the replay and metric stages run."""
    status: StatusReporter | None = None
    """Told when a pair enters and leaves the metrics stage (the status line's queue)."""
    _replayed: set[str] = field(default_factory=set[str])
    """Pairs (judge job ids) whose replay is over, or that need none, in this session."""

    @contextmanager
    def stage(self, jid: str, stage: StageName, *, clocked: bool = True) -> Gen[None]:
        """One stage of a job: on the work clock (unless ``clocked`` is False) and as an event."""
        started, start = time.time(), time.perf_counter()
        queued = stage == StageName.metrics and self.status is not None
        if queued and self.status is not None:
            self.status.metrics_queue(+1)
        try:
            with self.clock.work(stage) if clocked else nullcontext():
                yield
        finally:
            if queued and self.status is not None:
                self.status.metrics_queue(-1)
        seconds = round(time.perf_counter() - start, 3)
        self.bus.publish(StageFinished(job=jid, stage=stage.value, started=started, seconds=seconds))

    def rank(self, task_id: int, slug: str) -> tuple[int, int]:
        """Order of a pair for the browser pages: by task, then by model (models interleave)."""
        return [t.id for t in self.tasks].index(task_id), self.models.index(slug)

    def judged_names(self, slug: str) -> list[str]:
        """What a model's judging jobs are named after: the model, or ``<model>/<label>`` per design."""
        return [judged_name(slug, label) for label in self.judges]

    def judging_left(self) -> bool:
        """Whether some judging job of the run still has to run in this session."""
        if not self.layout.judge:
            return False
        finished = {row.id for row in self.store.jobs("judge") if self.recorder.finished(row)}
        return any(
            job_id("judge", t.id, name) not in finished
            for t in self.tasks
            for slug in self.models
            for name in self.judged_names(slug)
        )

    # -- the generate stage ------------------------------------------------------------------------

    async def generate(self, task: Task, slug: str) -> GenerationResult | None:
        """Generate the pair's page (or read back the one an earlier session wrote)."""
        jid, todo = self.recorder.open("gen", task.id, slug)
        pages = self.layout.pages_root
        if not todo:
            self.recorder.skipped(jid, "gen", task.id, slug)
            try:
                return read_record(pages / str(task.id) / self.layout.folder(slug))
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
            with self.stage(jid, StageName.generate), anyio.move_on_after(limit_s):
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

    def _note_sent(self, slug: str, result: GenerationResult) -> None:
        """Record in the manifest what the model's requests really carried (first answer per model)."""
        sent: dict[str, Any] = dict(self.store.manifest().get("sent_settings") or {})
        if result.sent is not None and slug not in sent:
            sent[slug] = result.sent.model_dump(mode="json", exclude={"fields"})
            self.store.set_manifest({"sent_settings": sent})

    # -- the judging stages: replay, metrics, rubric, record ----------------------------------------

    def _replay_over(self, jid: str) -> None:
        """The pair will use no browser page again; after the last pair, the backend is told."""
        if jid in self._replayed:
            return
        self._replayed.add(jid)
        if len(self._replayed) == self.pairs * len(self.judges):
            self.backend.replays_over()

    async def judge(
        self, task: Task, slug: str, result: GenerationResult | None, metrics: VisualMetrics | None
    ) -> None:
        """Judge the pair's page with each design: replay it, measure it, score it and record the
        evaluation (the designs' jobs side by side; the browser limit bounds their replays)."""

        async def one(label: str) -> None:
            try:
                await self._judge(task, slug, label, result, metrics)
            finally:
                self._replay_over(job_id("judge", task.id, judged_name(slug, label)))

        if len(self.judges) == 1:
            await one(next(iter(self.judges)))
            return
        async with anyio.create_task_group() as tg:
            for label in self.judges:
                tg.start_soon(one, label)

    async def _judge(
        self,
        task: Task,
        slug: str,
        label: str,
        result: GenerationResult | None,
        metrics: VisualMetrics | None,
    ) -> None:
        name = judged_name(slug, label)
        jid, todo = self.recorder.open("judge", task.id, name)
        if not todo:
            self.recorder.skipped(jid, "judge", task.id, name)
            return
        assert metrics is not None, "the engine builds them when judging is left"
        out = self.layout.judged_dir(task.id, slug, label)
        gen = self.store.job(job_id("gen", task.id, slug))
        if gen is not None and gen.status == JobStatus.failed:  # no page to judge: it scores 0
            await self._score_missing_page(task, slug, label, gen.failure, gen.message, metrics)
            return
        failed = self._failed_elsewhere(task.id, slug) if gen is None and not self.layout.generate else None
        if failed is not None:  # `iwr judge` on a tree whose generation.json says it failed
            error = failed.error
            kind = f"{FailureClass.generation_error}:{error.kind}" if error else None
            await self._score_missing_page(task, slug, label, kind, error.message if error else "", metrics)
            return
        evidence = f"{out.relative_to(self.run_dir).as_posix()}/evidence"
        cfg = self.config.judge.design(label)
        judges = self.judges[label]
        executor = lambda pool: Executor(  # noqa: E731 - the backend chooses the pool
            pool,
            judges.grounder,
            judges.assertions,
            ExecutorConfig(
                judge_error_policy=cfg.judge_error_policy,
                undetermined_policy=cfg.undetermined_policy,
                protocol=self.config.protocol,
            ),
            emit=self.agent_sink(jid, evidence),
            policy=judges.replay,
            step=judges.step,
        )
        gen_failed = result is not None and result.status == "failed"
        with (
            self.watchdog.watching(jid) as watch,
            self.recorder.job("judge", task.id, name, where=watch.progress.where) as handle,
        ):
            evaluation = await self._replay_then_score(handle, task, slug, label, executor, metrics, watch)
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
            message = f"replay took over {limits.judge_timeout_s:g} s ({watch.progress.where()})"
        handle.fail(failure, message)

    async def _replay_then_score(
        self,
        handle: JobHandle,
        task: Task,
        slug: str,
        label: str,
        executor: ExecutorFactory,
        metrics: VisualMetrics,
        watch: JobWatch,
    ) -> Evaluation:
        """Replay (holding a browser page), then the later stages with the page given back."""
        page, out = self.layout.page(task.id, slug), self.layout.judged_dir(task.id, slug, label)
        async with self.limits.browser.slot(self.rank(task.id, slug)):  # round-robin over models
            watch.scope.deadline = anyio.current_time() + self.config.limits.judge_timeout_s
            handle.started()
            with self.stage(handle.id, StageName.replay):
                replay = await self.backend.replay(executor, task, page, out / "evidence")
                self.text.flush(handle.id)
        self._replay_over(handle.id)
        # The job's deadline bounds its replay. Later stages wait in queues that grow with the run
        # (metrics are the slowest stage by design) and each batch or judge call has its own deadline.
        watch.scope.deadline = math.inf
        return await self._score_stages(handle.id, task, slug, label, replay, metrics)

    async def _score_stages(
        self, jid: str, task: Task, slug: str, label: str, replay: Replay, metrics: VisualMetrics
    ) -> Evaluation:
        """The stages after replay: metrics, rubric (with the design's rubric judge) and record."""
        out, protocol = self.layout.judged_dir(task.id, slug, label), self.config.protocol
        evidence, rubric = out / "evidence", self.judges[label].rubric
        if not self.config.metrics.measure:  # a run that measures judges only
            measured = not_measured()
        else:
            with self.stage(jid, StageName.metrics, clocked=False):  # the batches clock metrics work
                measured = await self.backend.measure(task, replay, evidence, metrics, protocol)
        answers: list[RubricResult | None] = [None] * len(measured.steps)
        if rubric is not None:
            with self.stage(jid, StageName.rubric), emitting(self.agent_sink(jid, "")):  # its calls, live
                answers = await rubric_stage(rubric, measured, evidence)
                self.text.flush(jid)
        with self.stage(jid, StageName.record):
            model = self.layout.folder(slug)  # eval.json names the model as its folder does
            evaluation = assemble(task, model, replay, measured, answers, rubric, protocol)
            await anyio.to_thread.run_sync(write_evaluation, evaluation, evidence, out)
        return evaluation

    def _failed_elsewhere(self, task_id: int, slug: str) -> GenerationResult | None:
        """The ``generation.json`` beside an existing page when it records a failed generation (as
        ``iwr generate`` writes it), else None: that page is the empty one a failure leaves, and
        is treated as ``iwr run`` treats it. A record that does not read is no record."""
        folder = self.layout.page(task_id, slug)
        if folder is None:
            return None
        try:
            record = read_record(folder)
        except (OSError, ValueError):
            return None
        return record if record.status == "failed" else None

    async def _score_missing_page(
        self,
        task: Task,
        slug: str,
        label: str,
        failure: str | None,
        message: str,
        metrics: VisualMetrics,
    ) -> None:
        """Record the judging of a page whose generation failed: nothing replayed, no pairs, 0."""
        out = self.layout.judged_dir(task.id, slug, label)
        with self.recorder.job("judge", task.id, judged_name(slug, label)) as handle:
            handle.started()
            why = f"generation failed ({failure or FailureClass.generation_error}): {message}"
            replay = Replay.nothing_run(task.record.action_sequence, "no_page", why[:500])
            evaluation = await self._score_stages(handle.id, task, slug, label, replay, metrics)
            self.recorder.evaluation(handle, _rel(self.run_dir, out), evaluation, True)


def _rel(run_dir: Path, path: Path) -> str:
    return path.relative_to(run_dir).as_posix()
