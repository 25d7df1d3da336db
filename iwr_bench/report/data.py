"""A finished (or stopped) run, read back from its folder for reporting.

:class:`RunData` holds, per (task, model), the :class:`~iwr_bench.scoring.formulas.TaskScore`
rebuilt from the store's metric rows (the same numbers ``iwr run`` prints), the failure and its
class, the ``eval.json`` record when there is one, and the task's record (levels, domain,
device) when the task set is still where the run found it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.engine.run import INFRA_FAILURES, stored_pairs, stored_task_score
from iwr_bench.engine.store import JobRow, RunStore, job_id, judged_names
from iwr_bench.official_code import prompt_label
from iwr_bench.protocol import EvalProtocol
from iwr_bench.scoring.evaluation import Evaluation
from iwr_bench.scoring.formulas import TaskScore

UNKNOWN = "unknown"


@dataclass
class Result:
    """One (task, model) pair of a run."""

    task_id: int
    model: str
    judged: bool
    """The judge job finished (done or failed); only judged pairs enter the means."""
    score: TaskScore | None
    """Scores (None when not judged); a judged pair without a score row scores 0."""
    failure: str | None = None
    """The first failure: the model's mistake or an infrastructure failure."""
    infra: bool = False
    """Whether ``failure`` is not the model's doing (generation error, crash, judge error, ...)."""
    message: str = ""
    cost_usd: float = 0.0
    judge_errors: int = 0
    undetermined: int = 0
    evaluation: Evaluation | None = None
    """The eval.json record, when it could be read."""
    eval_dir: Path | None = None
    """Folder of eval.json (evidence lives under ``evidence/``)."""
    backends: dict[str, str] = field(default_factory=dict[str, str])
    """Metric -> backend label (substitutes say so)."""
    no_page: bool = False
    """The judge found no ``index.html``, or the generation failed (the official generator then writes
    none): the official protocol leaves such a task out of the means."""


@dataclass
class TaskInfo:
    """What the breakdowns group by."""

    interaction: str = UNKNOWN
    visual: str = UNKNOWN
    domain: str = UNKNOWN
    device: str = UNKNOWN
    task: Task | None = None


@dataclass
class RunData:
    """Everything a report needs about one run."""

    run_dir: Path
    manifest: dict[str, Any]
    status: str
    models: list[str]
    task_ids: list[int]
    results: dict[tuple[str, int], Result]
    tasks: dict[int, TaskInfo]
    wall_s: float
    """Wall time over all sessions of the run."""
    tasks_found: bool
    """Whether the run's task set could be loaded (levels, domains, checkpoints, videos)."""

    @classmethod
    def load(cls, run_dir: Path) -> RunData:
        """Read ``run_dir``.

        Raises:
            StoreError: when it is not a run folder (a :class:`~iwr_bench.errors.UserError`).
        """
        store = RunStore.open_run(run_dir, readonly=True)
        try:
            return cls._read(run_dir, store)
        finally:
            store.close()

    @classmethod
    def _read(cls, run_dir: Path, store: RunStore) -> RunData:
        manifest = store.manifest()
        names = judged_names(manifest)  # a run comparing judge designs: each model once per design
        models: list[str] = [judged for _, judged in names]
        task_ids: list[int] = [int(t) for t in manifest.get("task_ids", [])]
        jobs = {j.id: j for j in store.jobs()}
        pairs = stored_pairs(store)
        labels: dict[str, dict[str, str]] = {}
        for jid, _step, metric, _value, backend, _sub in store.metrics():
            labels.setdefault(jid, {})[metric] = backend
        scores = {s.job: s for s in store.scores()}
        results: dict[tuple[str, int], Result] = {}
        own: dict[str, list[int]] = manifest.get("model_tasks", {})  # absent: every task
        for model, judged in names:
            for tid in own.get(model, task_ids):
                gen, judge = jobs.get(job_id("gen", tid, model)), jobs.get(job_id("judge", tid, judged))
                results[(judged, tid)] = _result(run_dir, tid, judged, gen, judge, scores, pairs, labels)
        wall = sum(
            float(getattr(e, "wall_s", 0.0)) for e in store.events(kinds=("run_finished",), limit=100_000)
        )
        tasks, found = _tasks(manifest, task_ids)
        return cls(
            run_dir=run_dir,
            manifest=manifest,
            status=str(store.meta("status") or UNKNOWN),
            models=models,
            task_ids=task_ids,
            results=results,
            tasks=tasks,
            wall_s=wall,
            tasks_found=found,
        )

    def tasks_of(self, model: str, task_ids: list[int] | None = None) -> list[int]:
        """The tasks ``model`` is judged on (among ``task_ids``, default all): a mutant's are its own."""
        ids = self.task_ids if task_ids is None else task_ids
        return [t for t in ids if (model, t) in self.results]

    def judged(self, model: str, task_ids: list[int] | None = None) -> list[Result]:
        """The judged results of ``model`` (over ``task_ids``, default all)."""
        return [r for t in self.tasks_of(model, task_ids) if (r := self.results[(model, t)]).judged]

    @property
    def protocol(self) -> EvalProtocol:
        """The run's evaluation protocol (runs from before the setting existed: default)."""
        return EvalProtocol(self.manifest.get("config", {}).get("protocol", "default"))

    @property
    def protocol_label(self) -> str:
        """``protocol default``, or under the official protocol whose prompts it used:
        ``protocol official (official rules, own prompts)`` unless it read the authors' code."""
        if self.protocol is not EvalProtocol.official:
            return f"protocol {self.protocol.value}"
        return f"protocol official ({self.manifest.get('prompts') or prompt_label('')})"

    def setting(self, key: str) -> Any:
        """A comparable setting from the manifest (protocol, judges, metric backends, policies, tasks)."""
        return {
            "protocol": self.protocol.value,
            "judges": self.manifest.get("judges"),
            "metric backends": [
                {k: b.get(k) for k in ("metric", "engine", "model", "weights", "substitute")}
                for b in self.manifest.get("metric_backends", [])
            ],
            "policies": self.manifest.get("policies"),
            "tasks": self.manifest.get("task_digests"),
        }[key]


def _result(
    run_dir: Path,
    tid: int,
    model: str,
    gen: JobRow | None,
    judge: JobRow | None,
    scores: dict[str, Any],
    pairs: dict[str, dict[int, dict[str, float | None]]],
    labels: dict[str, dict[str, str]],
) -> Result:
    cost = gen.cost_usd if gen is not None else 0.0
    if judge is None or judge.status not in ("done", "failed"):
        failure = gen.failure if gen is not None and gen.status == "failed" else None
        return Result(
            tid, model, judged=False, score=None, failure=failure, infra=failure is not None, cost_usd=cost
        )
    row = scores.get(judge.id)
    eval_dir: Path | None = None
    evaluation: Evaluation | None = None
    if row is not None:
        eval_dir = (run_dir / row.eval_path).parent
        try:
            evaluation = Evaluation.model_validate(json.loads((run_dir / row.eval_path).read_text()))
        except (OSError, ValueError):
            evaluation = None
    score = stored_task_score(row, pairs.get(judge.id, {}))
    failure = judge.failure if row is None else judge.failure or row.failure
    gen_failed = gen is not None and gen.status == "failed"
    if gen_failed and gen is not None:
        failure = (gen.failure or "generation_error").split(":", 1)[0]
    replay = evaluation.replay if evaluation is not None else None
    return Result(
        task_id=tid,
        model=model,
        judged=True,
        score=score,
        failure=failure,
        infra=bool(failure)
        and (failure in INFRA_FAILURES or failure in ("engine_error", "cancelled") or gen_failed),
        message=judge.message,
        cost_usd=cost,
        judge_errors=replay.judge_errors if replay else 0,
        undetermined=replay.undetermined if replay else 0,
        evaluation=evaluation,
        eval_dir=eval_dir,
        backends=labels.get(judge.id, {}),
        no_page=(row is not None and row.failure == "no_page") or gen_failed,
    )


def _tasks(manifest: dict[str, Any], task_ids: list[int]) -> tuple[dict[int, TaskInfo], bool]:
    infos = {t: TaskInfo() for t in task_ids}
    source = manifest.get("tasks_source")
    if not source:
        return infos, False
    try:
        task_set = load_tasks(Path(source))
    except Exception:  # noqa: BLE001 - the task set moved or changed: report without its details
        return infos, False
    for task in task_set.tasks:
        if task.id not in infos:
            continue
        c = task.record.classification
        device = task.record.recording_details.environment
        infos[task.id] = TaskInfo(
            interaction=c.level or UNKNOWN,
            visual=c.visual_level or UNKNOWN,
            domain=c.domain or UNKNOWN,
            device=device or UNKNOWN,
            task=task,
        )
    return infos, True
