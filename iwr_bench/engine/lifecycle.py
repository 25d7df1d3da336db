"""One job's life, recorded: queued, started, then done, failed or skipped, in the store and as events.

:meth:`Recorder.job` is the one context manager every job runs in. It publishes the job's
queueing, turns what escapes its body into a recorded failure (a deadline into ``timeout``, a
bug into ``engine_error``) and lets a full or read-only run folder stop the run instead, since
that is no fault of the job. :class:`JobFinished` events are built in one place
(:meth:`JobHandle.finish`).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iwr_bench.engine.backends.base import WorkerLost
from iwr_bench.engine.bus import EventBus
from iwr_bench.engine.deadlines import StepTimeout, find_error
from iwr_bench.engine.events import FailureEvent, JobFinished, JobQueued, JobStarted, MetricComputed, Stage
from iwr_bench.engine.records import FINISHED, INFRA_FAILURES, FailureClass, JobStatus, ScoreRow
from iwr_bench.engine.store import JobRow, RunFolderError, RunStore, folder_error, job_id
from iwr_bench.scoring.evaluation import Evaluation
from iwr_bench.scoring.formulas import Scores

log = logging.getLogger(__name__)


def run_folder_error(run_dir: Path, exc: BaseException) -> RunFolderError | None:
    """The run-folder error inside ``exc`` (a full disk, a read-only folder), if that is what it is."""
    found = find_error(exc, RunFolderError)
    if isinstance(found, RunFolderError):
        return found
    for kind in (OSError, sqlite3.Error):
        inner = find_error(exc, kind)
        if inner is not None:
            return folder_error(run_dir, inner)
    return None


@dataclass
class JobHandle:
    """A job in progress: what it is, when it began, and how to record its end."""

    recorder: Recorder
    id: str
    stage: Stage
    task_id: int
    model: str
    start: float = field(default_factory=time.perf_counter)
    ended: bool = False

    @property
    def seconds(self) -> float:
        """Wall time since the job was queued."""
        return time.perf_counter() - self.start

    def started(self) -> None:
        """The job has its resources and begins its work."""
        self.recorder.store.start_job(self.id)
        self.recorder.bus.publish(
            JobStarted(job=self.id, stage=self.stage, task_id=self.task_id, model=self.model)
        )

    def fail(self, failure: str, message: str) -> None:
        """Record that the job ended without a result."""
        self.finish(JobStatus.failed, None, failure=failure, message=message)

    def finish(
        self,
        status: JobStatus,
        result: dict[str, Any] | None,
        *,
        failure: str | None = None,
        message: str = "",
        cost_usd: float = 0.0,
        scores: Scores | None = None,
        shown_failure: str | None = None,
    ) -> None:
        """Record the job's end in the store, then publish its failure (if any) and its end."""
        seconds = self.seconds
        store, bus = self.recorder.store, self.recorder.bus
        store.finish_job(
            self.id,
            status=status,
            result=result,
            failure=failure,
            message=message,
            seconds=seconds,
            cost_usd=cost_usd,
        )
        if failure is not None:
            bus.publish(FailureEvent(job=self.id, stage=self.stage, failure=failure, message=message))
        bus.publish(
            JobFinished(
                job=self.id,
                stage=self.stage,
                task_id=self.task_id,
                model=self.model,
                status=status.value,  # type: ignore[arg-type]
                failure=shown_failure or failure,
                message=message[:500],
                scores=scores,
                cost_usd=cost_usd,
                seconds=round(seconds, 3),
            )
        )
        self.ended = True


class Recorder:
    """Writes jobs' lives into the run's store and onto its event bus."""

    def __init__(self, store: RunStore, bus: EventBus, run_dir: Path, *, retry_failed: bool) -> None:
        self.store = store
        self.bus = bus
        self.run_dir = run_dir
        self.retry_failed = retry_failed
        self._earlier_scores: dict[str, ScoreRow] | None = None

    def open(self, stage: Stage, task_id: int, model: str) -> tuple[str, bool]:
        """The job's id, and whether it must run (False: it finished in an earlier session)."""
        row = self.store.ensure_job(stage, task_id, model)
        finished = self.finished(row)
        if not finished and row.attempts:
            self.store.reopen_job(row.id)
        return row.id, not finished

    def finished(self, row: JobRow) -> bool:
        """Whether a job finished in an earlier session (a failure counts unless retried)."""
        return row.status == JobStatus.done or (row.status == JobStatus.failed and not self.retry_failed)

    def skipped(self, jid: str, stage: Stage, task_id: int, model: str) -> None:
        """Publish that a job finished in an earlier session (with its scores, for judging)."""
        row = self._earlier(jid) if stage == "judge" else None
        job = self.store.job(jid) if stage == "judge" else None
        failure = (job.failure if job else None) or (row.failure if row else None)
        self.bus.publish(
            JobFinished(
                job=jid,
                stage=stage,
                task_id=task_id,
                model=model,
                status="skipped",
                failure=failure,
                scores=row.as_scores() if row else None,
            )
        )

    def _earlier(self, jid: str) -> ScoreRow | None:
        if self._earlier_scores is None:
            self._earlier_scores = {row.job: row for row in self.store.scores()}
        return self._earlier_scores.get(jid)

    @contextmanager
    def job(
        self,
        stage: Stage,
        task_id: int,
        model: str,
        *,
        jid: str | None = None,
        where: Callable[[], str] = lambda: "",
        error_class: FailureClass = FailureClass.engine_error,
    ) -> Generator[JobHandle]:
        """Run a job's body: its queueing published, whatever escapes it recorded as its failure.

        Raises:
            RunFolderError: the run folder cannot be written (the run stops, resumably).
        """
        handle = JobHandle(self, jid or job_id(stage, task_id, model), stage, task_id, model)
        self.bus.publish(JobQueued(job=handle.id, stage=stage, task_id=task_id, model=model))
        try:
            yield handle
        except Exception as exc:
            stop = run_folder_error(self.run_dir, exc)
            if stop is not None:
                raise stop from exc
            timed_out = find_error(exc, StepTimeout)
            if timed_out is not None:
                handle.fail(FailureClass.timeout, f"{timed_out} ({where() or stage})")
                return
            lost = find_error(exc, WorkerLost)
            if lost is not None:  # a Ray worker died on every try
                handle.fail(FailureClass.worker_lost, str(lost))
                return
            log.exception("%s of %s on task %d failed", stage, model, task_id)
            handle.fail(error_class, f"{type(exc).__name__}: {exc}")

    def cancelled(self, task_id: int, model: str, judged: list[str] | None = None) -> None:
        """Record the pair's unfinished jobs as cancelled by the user (``judged``: the names its
        judging jobs go by, one per design; default the model's)."""
        jobs: list[tuple[Stage, str]] = [("gen", model), *(("judge", name) for name in (judged or [model]))]
        for stage, name in jobs:
            jid = job_id(stage, task_id, name)
            row = self.store.job(jid)
            if row is not None and row.status not in FINISHED:
                JobHandle(self, jid, stage, task_id, name).fail(
                    FailureClass.cancelled, "cancelled by the user"
                )

    def evaluation(self, handle: JobHandle, rel: str, ev: Evaluation, gen_failed: bool) -> None:
        """Record a judged page: its actions, metric values, scores and the job's end."""
        replay = ev.replay
        self.store.put_actions(
            handle.id, [a.model_dump(mode="json") for a in replay.actions], f"{rel}/evidence"
        )
        self._metric_values(handle.id, ev)
        failing = next((a for a in replay.actions if a.status == "failed"), None)
        model_failure = replay.failure or (failing.failure if failing else None)
        infra: str | None = FailureClass.generation_error if gen_failed else None
        if infra is None and model_failure in INFRA_FAILURES:
            infra = model_failure
        scores = ev.as_scores()
        row = ScoreRow(
            **scores.model_dump(),
            job=handle.id,
            task_id=ev.task_id,
            model=handle.model,
            failure=model_failure,
            eval_path=f"{rel}/eval.json",
        )
        self.store.put_score(row)
        handle.finish(
            JobStatus.failed if infra else JobStatus.done,
            {"eval": row.eval_path, **scores.model_dump(), "failure": model_failure},
            failure=infra,
            message=replay.message or (failing.message if failing else ""),
            scores=scores,
            shown_failure=infra or model_failure,
        )

    def _metric_values(self, jid: str, ev: Evaluation) -> None:
        ocr_b, dino_b = ev.backends[0], ev.backends[1]
        values: list[tuple[int, str, float | None, str, bool]] = []
        for p in ev.score.pairs:  # the pairs that count (the official protocol cuts the list)
            values.append((p.step, "ocr", p.ocr, ocr_b.label, ocr_b.substitute))
            values.append((p.step, "dino", p.dino, dino_b.label, dino_b.substitute))
            if p.hvs is not None:
                values.append((p.step, "rubric", p.hvs, ev.rubric_judge or "rubric", False))
        self.store.put_metrics(jid, values)
        for step, metric, value, backend, _sub in values:
            self.bus.publish(MetricComputed(job=jid, step=step, metric=metric, value=value, backend=backend))
