"""A run's summary from its store: per-model means (x100), failure counts, cost."""

from __future__ import annotations

from typing import Any

from iwr_bench.agents.judge.records import undetermined_rate
from iwr_bench.engine.records import FINISHED, INFRA_FAILURES, FailureClass, JobStatus, ScoreRow
from iwr_bench.engine.store import JobRow, RunStore, job_id, judged_names
from iwr_bench.protocol import EvalProtocol
from iwr_bench.scoring.formulas import PairScore, TaskScore


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


class _Tally:
    """What the summary counts for one model while it walks the tasks."""

    def __init__(self) -> None:
        self.per_task: list[tuple[TaskScore, bool]] = []
        self.failures: dict[str, int] = {}
        self.mistakes: dict[str, int] = {}
        self.verdicts: list[str | None] = []
        self.unseen_pages = 0
        self.cost = 0.0
        self.judged = 0
        self.generated = 0

    def count(self, into: dict[str, int], key: str) -> None:
        into[key] = into.get(key, 0) + 1

    def generation(self, gen: JobRow) -> None:
        self.cost += gen.cost_usd
        self.generated += gen.status in FINISHED
        if gen.status == JobStatus.failed and gen.failure:
            self.count(self.failures, gen.failure.split(":", 1)[0])

    def judging(
        self, store: RunStore, judge: JobRow, gen: JobRow | None, row: ScoreRow | None, pairs: Any
    ) -> None:
        self.judged += 1
        actions = store.actions(judge.id)
        self.verdicts += [(a.get("assertion") or {}).get("verdict") for a in actions]
        self.unseen_pages += any(a.get("status") == "ok" and a.get("unseen") for a in actions)
        if judge.failure and judge.failure != FailureClass.generation_error:
            self.count(self.failures, judge.failure)
        # a failed generation counts as no page: the official generator writes none for it
        no_page = (row is not None and row.failure == FailureClass.no_page) or (
            gen is not None and gen.status == JobStatus.failed
        )
        self.per_task.append((stored_task_score(row, pairs), no_page))
        if row is not None and row.failure and row.failure not in INFRA_FAILURES:
            self.count(self.mistakes, row.failure)


def run_summary(store: RunStore) -> dict[str, Any]:
    """Per-model means (x100) and failure counts of a run, from its store."""
    manifest = store.manifest()
    protocol = EvalProtocol(manifest.get("config", {}).get("protocol", "default"))
    task_ids: list[int] = manifest.get("task_ids", [])
    jobs = {j.id: j for j in store.jobs()}
    metrics = stored_pairs(store)
    scores = {s.job: s for s in store.scores()}
    out: dict[str, Any] = {
        "models": {},
        "status": store.meta("status"),
        "skipped_records": len(manifest.get("skipped_records", [])),
        "substitutes": sorted({backend for *_, backend, sub in store.metrics() if sub}),
    }
    own: dict[str, list[int]] = manifest.get("model_tasks", {})  # runs before it: every task
    for model, judged in judged_names(manifest):  # (one entry per design when a run compares several)
        tally = _Tally()
        ids = own.get(model, task_ids)
        for tid in ids:
            gen = jobs.get(job_id("gen", tid, model))
            judge = jobs.get(job_id("judge", tid, judged))
            if gen is not None:
                tally.generation(gen)
            if judge is not None and judge.status in FINISHED:
                tally.judging(store, judge, gen, scores.get(judge.id), metrics.get(judge.id, {}))
        out["models"][judged] = _model_summary(tally, protocol, len(ids))
    return out


def _model_summary(tally: _Tally, protocol: EvalProtocol, tasks: int) -> dict[str, Any]:
    from iwr_bench.scoring.official import aggregate

    s, left_out, hvs_missing = aggregate(tally.per_task, protocol)
    return {
        "protocol": protocol.value,
        "left_out": left_out,
        "hvs_missing": hvs_missing,
        "tasks": tasks,
        "generated": tally.generated,
        "judged": tally.judged,
        "ifs": s.ifs if s else None,
        "ifs_micro": s.ifs_micro if s else None,
        "lvs": s.lvs if s else None,
        "hvs": s.hvs if s else None,
        "vfs": s.vfs if s else None,
        "final": s.final if s else None,
        "lvs_only": s.lvs_only if s else True,
        "failures": tally.failures,
        "mistakes": tally.mistakes,
        "undetermined": undetermined_rate(tally.verdicts),
        "unseen_pages": tally.unseen_pages,
        "cost_usd": round(tally.cost, 6),
    }


def unseen_lines(summary: dict[str, Any]) -> list[str]:
    """One line per model whose score rests on steps no person could have done (the official
    protocol acts on undrawn and covered controls; the default one fails such a step)."""
    return [
        f"{name}: on {m['unseen_pages']} page(s) the score rests on controls no person could see or "
        "reach (acted on as the official scripts do; see each eval.json's unseen_steps)"
        for name, m in summary["models"].items()
        if m.get("unseen_pages")
    ]


def substitute_lines(summary: dict[str, Any]) -> list[str]:
    """One line per substitute metric backend the run's numbers came from (none: no line)."""
    return [
        f"substitute backend in use: {label} (the numbers are not paper-comparable)"
        for label in summary.get("substitutes", [])
    ]
