"""Score a replay: visual pairs against the checkpoints, IFS/LVS/HVS/VFS/Final, and eval.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, Field

from iwr_bench.agents.judge.records import Replay
from iwr_bench.agents.judge.rubric import RubricResult
from iwr_bench.dataset.layout import Task
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.hashing import as_image
from iwr_bench.metrics.pair import PairMetric
from iwr_bench.metrics.scoring import PairScore, TaskScore

EVAL_VERSION = 1


class VisualMetrics(BaseModel):
    """The metric backends a run scores with (HVS stays unavailable without a rubric judge)."""

    model_config = {"arbitrary_types_allowed": True}

    ocr: Any
    """OCR similarity metric (a :class:`~iwr_bench.metrics.pair.PairMetric`)."""
    dino: Any
    """Image-embedding similarity metric (DINOv2 or a labelled substitute)."""
    rubric: Any = None
    """Rubric judge (a :class:`~iwr_bench.agents.judge.rubric.RubricJudge`) giving HVS; None: unavailable."""


class Evaluation(BaseModel):
    """Everything judged about one (task, model) page; written as eval.json."""

    version: int = EVAL_VERSION
    """Format version of this record."""
    task_id: int
    """Task id."""
    model: str
    """Generator the page came from."""
    total_step: int
    """Official field: number of actions."""
    success_step: int
    """Official field: length of the successful prefix."""
    screenshots: dict[int, str] = Field(default_factory=dict)
    """Official field: scored step -> evalpoints file (relative to this record)."""
    all_ocr_scores: list[float] = Field(default_factory=list)
    """Official field: OCR similarity per scored pair."""
    all_dino_scores: list[float] = Field(default_factory=list)
    """Official field: DINO (or substitute) similarity per scored pair."""
    all_mllm_scores: list[float | None] = Field(default_factory=list)
    """Official field: rubric score / 100 per pair; None where no rubric judge ran."""
    assertion_results: list[dict[str, Any]] = Field(default_factory=list)
    """Official field: per asserted action, the verdict and reasoning."""
    ifs: float
    """Interaction fidelity (0-1)."""
    lvs: float
    """Mean LVS (0-1)."""
    hvs: float | None
    """Mean HVS (0-1), None when unavailable."""
    vfs: float
    """Visual fidelity (0-1; LVS alone when ``lvs_only``)."""
    final: float
    """0.7 IFS + 0.3 VFS (0-1)."""
    lvs_only: bool
    """VFS uses LVS alone (no rubric judge): not paper-comparable."""
    backends: list[Backend]
    """Metric backends behind the numbers."""
    rubric_judge: str | None = None
    """Rubric judge behind ``all_mllm_scores`` (None: HVS unavailable)."""
    rubric_results: list[RubricResult] = Field(default_factory=list)
    """Per scored pair, the rubric parts and the judge's reasoning."""
    rubric_errors: int = 0
    """Rubric answers unusable after the retries (each scored 0)."""
    replay: Replay
    """Per-action evidence and verdicts."""
    undetermined_rate: float | None = None
    """Share (0-1) of the judged assertions the assertion judge could not decide (None: none judged)."""

    @property
    def score(self) -> TaskScore:
        """The numbers as a :class:`TaskScore`."""
        pairs = [
            PairScore(step=step, ocr=o, dino=d, hvs=h)
            for step, o, d, h in zip(
                self.screenshots, self.all_ocr_scores, self.all_dino_scores, self.all_mllm_scores, strict=True
            )
        ]
        return TaskScore(total_steps=self.total_step, success_steps=self.success_step, pairs=pairs)


def scored_pairs(task: Task, replay: Replay) -> list[tuple[int, Path, str]]:
    """(step, checkpoint, replay screenshot) for the initial state and flagged steps in the prefix."""
    out: list[tuple[int, Path, str]] = []
    for step, shot in sorted(replay.screenshots.items()):
        checkpoint = task.initial_checkpoint if step == 0 else task.checkpoint_after(step - 1)
        if checkpoint is not None and step <= replay.success_steps:
            out.append((step, checkpoint, shot))
    return out


async def evaluate(
    task: Task, model: str, replay: Replay, evidence: Path, out: Path, metrics: VisualMetrics
) -> Evaluation:
    """Score a replay and write ``out/eval.json`` and ``out/evalpoints/<step>.png``."""
    pairs = scored_pairs(task, replay)
    images = [(as_image(cp.read_bytes()), as_image((evidence / shot).read_bytes())) for _, cp, shot in pairs]
    ocr_metric: PairMetric = metrics.ocr
    dino_metric: PairMetric = metrics.dino
    # Rounded to 6 places before scoring: an embedder's float noise depends on the batch a pair
    # was computed in, and a resumed run batches differently; the scores must not.
    ocr = [round(v, 6) for v in await ocr_metric(images)]
    dino = [round(v, 6) for v in await dino_metric(images)]
    rubric_results = await _rubric(metrics.rubric, pairs, evidence)
    hvs = [None if r is None else round(r.score / 100, 6) for r in rubric_results]
    points = out / "evalpoints"
    points.mkdir(parents=True, exist_ok=True)
    shots: dict[int, str] = {}
    for step, _, shot in pairs:
        shutil.copyfile(evidence / shot, points / f"{step}.png")
        shots[step] = f"evalpoints/{step}.png"
    score = TaskScore(
        total_steps=replay.total_steps,
        success_steps=replay.success_steps,
        pairs=[
            PairScore(step=s, ocr=o, dino=d, hvs=h)
            for (s, _, _), o, d, h in zip(pairs, ocr, dino, hvs, strict=True)
        ],
    )
    evaluation = Evaluation(
        task_id=task.id,
        model=model,
        total_step=replay.total_steps,
        success_step=replay.success_steps,
        screenshots=shots,
        all_ocr_scores=ocr,
        all_dino_scores=dino,
        all_mllm_scores=hvs,
        assertion_results=[
            {
                "index": a.index,
                "assertion": task.record.action_sequence[a.index].logical_assertion,
                **a.assertion.model_dump(),
            }
            for a in replay.actions
            if a.assertion is not None
        ],
        ifs=score.ifs,
        lvs=score.lvs,
        hvs=score.hvs,
        vfs=score.vfs,
        final=score.final,
        lvs_only=score.lvs_only,
        backends=[ocr_metric.backend, dino_metric.backend, *_rubric_backend(metrics.rubric)],
        rubric_judge=None if metrics.rubric is None else metrics.rubric.name,
        rubric_results=[r for r in rubric_results if r is not None],
        rubric_errors=sum(1 for r in rubric_results if r is not None and r.error),
        replay=replay,
        undetermined_rate=replay.undetermined_rate(),
    )
    tmp = out / ".eval.json.tmp"
    tmp.write_text(json.dumps(evaluation.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / "eval.json")
    return evaluation


async def _rubric(
    judge: Any, pairs: list[tuple[int, Path, str]], evidence: Path
) -> list[RubricResult | None]:
    """The rubric judge's answer per pair (reference first), all pairs at once; None without a judge."""
    results: list[RubricResult | None] = [None] * len(pairs)
    if judge is None:
        return results

    async def one(i: int, checkpoint: Path, shot: str) -> None:
        results[i] = await judge(checkpoint.read_bytes(), (evidence / shot).read_bytes())

    async with anyio.create_task_group() as tg:
        for i, (_, checkpoint, shot) in enumerate(pairs):
            tg.start_soon(one, i, checkpoint, shot)
    return results


def _rubric_backend(judge: Any) -> list[Backend]:
    if judge is None:
        return []
    return [Backend(metric="rubric", engine="pydantic-ai", model=judge.name, weights="judge model")]
