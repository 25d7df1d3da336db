"""Score a replay: visual pairs against the checkpoints, IFS/LVS/HVS/VFS/Final, and eval.json.

``eval.json`` is a strict superset of the official file (see :class:`Evaluation`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from PIL import Image
from pydantic import BaseModel, Field

from iwr_bench.agents.judge.records import Replay
from iwr_bench.agents.judge.rubric import RubricJudgeRole, RubricResult
from iwr_bench.dataset.layout import Task
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.hashing import as_image
from iwr_bench.metrics.pair import PairMetric, run_exclusive, text_reader
from iwr_bench.protocol import EvalProtocol
from iwr_bench.scoring.formulas import PairScore, Scores, ScoreValues, TaskScore
from iwr_bench.scoring.official import assertion_entry, counted_pairs, hvs_as_zero, official_pair_states

EVAL_VERSION = 2


class VisualMetrics(BaseModel):
    """The metric backends a run scores with (the rubric judge, giving HVS, is each judge design's:
    :class:`~iwr_bench.engine.judges.JudgeSet`)."""

    model_config = {"arbitrary_types_allowed": True}

    ocr: Any
    """OCR similarity metric (a :class:`~iwr_bench.metrics.pair.PairMetric`)."""
    dino: Any
    """Image-embedding similarity metric (DINOv2 or a labelled substitute)."""


class Evaluation(ScoreValues):
    """Everything judged about one (task, model) page; written as eval.json.

    A strict superset of the official ``eval.json`` (protocol.md section 6): the official fields
    keep their names, shapes and meaning, so the official reporting reads this file as is; our
    own fields sit beside them under names of their own. All paths are relative to the folder
    that holds ``eval.json``.

    Without a rubric judge, ``all_mllm_scores`` and ``all_mllm_res`` are empty and ``mllm_score``
    is 0, the representation under which the official aggregation runs (it then counts HVS as 0);
    ``hvs_available`` is false, and our own ``hvs`` is None. Our five scores (0-1, the fields of
    :class:`~iwr_bench.scoring.formulas.ScoreValues`) come first in the file; under the official
    protocol a page without HVS has VFS 0.5 LVS (HVS counted as 0), as the official tables do.
    """

    version: int = EVAL_VERSION
    """Format version of this record."""
    task_id: int
    """Task id."""
    model: str
    """Generator the page came from."""
    protocol: EvalProtocol = EvalProtocol.default
    """Protocol the page was judged under (decides which states are scored)."""
    total_step: int
    """Official: number of actions."""
    success_step: int
    """Official: length of the successful prefix."""
    screenshot_paths_to_eval: list[str] = Field(default_factory=list[str])
    """Official: the scored replay screenshots in pair order, relative to the folder of eval.json
    (``evalpoints/<k>.png``, the state after k executed actions)."""
    all_mllm_scores: list[float] = Field(default_factory=list[float])
    """Official: rubric score / 100 per pair (0-1; an unusable answer is 0); empty without a rubric judge."""
    all_dino_scores: list[float] = Field(default_factory=list[float])
    """Official: DINO (or labelled substitute) similarity per pair."""
    all_ocr_scores: list[float] = Field(default_factory=list[float])
    """Official: OCR similarity per pair."""
    all_avg_scores: list[float] = Field(default_factory=list[float])
    """Official: (mllm + dino + ocr) / 3 per pair; empty when any of the three lists is empty."""
    mllm_score: float = 0.0
    """Official: mean of ``all_mllm_scores`` (0 for an empty list)."""
    dino_score: float = 0.0
    """Official: mean of ``all_dino_scores`` (0 for an empty list)."""
    ocr_score: float = 0.0
    """Official: mean of ``all_ocr_scores`` (0 for an empty list)."""
    avg_score: float = 0.0
    """Official: mean of ``all_avg_scores`` (0 for an empty list)."""
    all_mllm_res: list[str] = Field(default_factory=list[str])
    """Official: the rubric judge's answer per pair, as text ending in ``Score: <n>/100``."""
    all_ocr_texts: list[dict[str, Any]] = Field(default_factory=list[dict[str, Any]])
    """Official: per pair ``{"checkpoint_text", "screenshot_text", "similarity"}`` (empty when the OCR
    backend does not expose its text)."""
    assertion_results: list[dict[str, Any] | None] = Field(default_factory=list[dict[str, Any] | None])
    """Official: one entry per action, None where no assertion was checked, else
    ``{"result": "Yes"|"No"|"Error", ...}`` (see :func:`~iwr_bench.scoring.official.assertion_entry`)."""
    scored_steps: list[int] = Field(default_factory=list[int])
    """Ours: per pair, the replay state k (0 = initial, k = after k executed actions)."""
    pair_checkpoints: list[str] = Field(default_factory=list[str])
    """Ours: per pair, the reference checkpoint (file name inside the task's ``checkpoints/``)."""
    counted_pairs: int = 0
    """Ours: pairs that enter the scores (official: the first ``success_step + 1``; default: all)."""
    hvs_available: bool = False
    """Ours: a rubric judge scored the pairs (False: ``all_mllm_scores`` is empty, HVS is missing)."""
    backends: list[Backend]
    """Metric backends behind the numbers."""
    rubric_judge: str | None = None
    """Rubric judge behind ``all_mllm_scores`` (None: HVS unavailable)."""
    rubric_results: list[RubricResult] = Field(default_factory=list[RubricResult])
    """Per scored pair, the rubric parts and the judge's reasoning."""
    rubric_errors: int = 0
    """Rubric answers unusable after the retries (each scored 0)."""
    replay: Replay
    """Per-action evidence and verdicts."""
    no_page: bool = False
    """True when there was no page to judge (none was found, or its generation failed): nothing
    was replayed, and the zeros above are not a judged page's. The task counts as 0 under the
    default protocol and is left out of the means under the official one (``replay.failure``
    names why)."""
    undetermined_rate: float | None = None
    """Share (0-1) of the judged assertions the assertion judge could not decide (None: none judged)."""
    unseen_steps: int = 0
    """Successful steps that acted on a control no person could see or reach (official protocol
    only, which acts on them as the official scripts do): a score that rests on them is flagged."""

    @property
    def pair_keys(self) -> list[int]:
        """A unique key per pair for the store: the state k (default) or the pair's checkpoint
        number k (official, where one state can be listed twice)."""
        if self.protocol == EvalProtocol.official:
            return list(range(len(self.scored_steps)))
        return list(self.scored_steps)

    def as_scores(self) -> Scores:
        """The page's five scores and steps as one record (the store's row, the job's end event)."""
        return Scores(
            **self.model_dump(include=set(ScoreValues.model_fields)),
            total_steps=self.total_step,
            success_steps=self.success_step,
        )

    @property
    def score(self) -> TaskScore:
        """The numbers as a :class:`TaskScore` over the counted pairs (HVS None when unavailable)."""
        n = self.counted_pairs
        hvs: list[float | None] = list(self.all_mllm_scores[:n]) if self.hvs_available else [None] * n
        pairs = [
            PairScore(step=step, ocr=o, dino=d, hvs=h)
            for step, o, d, h in zip(
                self.pair_keys[:n], self.all_ocr_scores[:n], self.all_dino_scores[:n], hvs, strict=True
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


def protocol_pairs(task: Task, replay: Replay, protocol: EvalProtocol) -> list[tuple[int, Path, str]]:
    """The scored pairs under ``protocol``: (state k, checkpoint, evidence file of state k)."""
    if protocol == EvalProtocol.official:
        return [(k, cp, f"step_{k}.png") for k, cp in official_pair_states(task, replay)]
    return scored_pairs(task, replay)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


class Measured(BaseModel):
    """The metrics stage's output for one replay: what was compared, and the similarities (data only)."""

    steps: list[int]
    """Per pair, the replay state k."""
    checkpoints: list[str]
    """Per pair, the reference checkpoint's path."""
    shots: list[str]
    """Per pair, the replay screenshot (file name inside the evidence folder)."""
    ocr: list[float]
    """OCR similarity per pair (rounded to 6 places)."""
    dino: list[float]
    """Image-embedding similarity per pair (rounded to 6 places)."""
    texts: list[dict[str, Any]]
    """Official ``all_ocr_texts`` entries (empty when the OCR backend exposes no text)."""
    backends: list[Backend]
    """The OCR and image backends behind the numbers."""


async def measure(
    task: Task, replay: Replay, evidence: Path, metrics: VisualMetrics, protocol: EvalProtocol
) -> Measured:
    """The metrics stage: OCR and image similarity of every scored pair (no rubric, nothing written)."""
    pairs = protocol_pairs(task, replay, protocol)
    images = await anyio.to_thread.run_sync(_load_pairs, pairs, evidence)
    ocr_metric: PairMetric = metrics.ocr
    dino_metric: PairMetric = metrics.dino
    # Rounded to 6 places before scoring: an embedder's float noise depends on the batch a pair
    # was computed in, and a resumed run batches differently; the scores must not.
    ocr = [round(v, 6) for v in await ocr_metric(images)]
    dino = [round(v, 6) for v in await dino_metric(images)]
    return Measured(
        steps=[k for k, _, _ in pairs],
        checkpoints=[str(cp) for _, cp, _ in pairs],
        shots=[shot for _, _, shot in pairs],
        ocr=ocr,
        dino=dino,
        texts=await _ocr_texts(ocr_metric, images, ocr),
        backends=[ocr_metric.backend, dino_metric.backend],
    )


_NOT_MEASURED = "[metrics] measure = false: nothing was measured; VFS is not a score"


def not_measured() -> Measured:
    """The metrics stage of a run that measures no looks (``[metrics] measure = false``): no pairs,
    and both backends (OCR, image) named ``not-measured``."""
    backends = [
        Backend(metric=metric, engine="not-measured", note=_NOT_MEASURED, substitute=True)
        for metric in ("ocr", "dino")
    ]
    return Measured(steps=[], checkpoints=[], shots=[], ocr=[], dino=[], texts=[], backends=backends)


def _load_pairs(pairs: list[tuple[int, Path, str]], evidence: Path) -> list[tuple[Image.Image, Image.Image]]:
    return [(as_image(cp.read_bytes()), as_image((evidence / shot).read_bytes())) for _, cp, shot in pairs]


async def rubric_stage(
    judge: RubricJudgeRole | None, measured: Measured, evidence: Path
) -> list[RubricResult | None]:
    """The rubric stage: the rubric judge's answer per measured pair (None each without a judge)."""
    pairs = [
        (k, Path(cp), shot)
        for k, cp, shot in zip(measured.steps, measured.checkpoints, measured.shots, strict=True)
    ]
    return await _rubric(judge, pairs, evidence)


async def evaluate(
    task: Task,
    model: str,
    replay: Replay,
    evidence: Path,
    out: Path,
    metrics: VisualMetrics,
    protocol: EvalProtocol = EvalProtocol.default,
    rubric: RubricJudgeRole | None = None,
) -> Evaluation:
    """Score a replay and write ``out/eval.json`` and ``out/evalpoints/<k>.png`` (every executed
    state); with a rubric judge, HVS too."""
    measured = await measure(task, replay, evidence, metrics, protocol)
    rubric_results = await rubric_stage(rubric, measured, evidence)
    evaluation = assemble(task, model, replay, measured, rubric_results, rubric, protocol)
    await anyio.to_thread.run_sync(write_evaluation, evaluation, evidence, out)
    return evaluation


def assemble(
    task: Task,
    model: str,
    replay: Replay,
    measured: Measured,
    rubric_results: list[RubricResult | None],
    rubric: RubricJudgeRole | None,
    protocol: EvalProtocol = EvalProtocol.default,
) -> Evaluation:
    """The :class:`Evaluation` of a replay from its measured pairs and rubric answers (pure)."""
    ocr, dino, steps = measured.ocr, measured.dino, measured.steps
    available = rubric is not None
    mllm = [round(r.score / 100, 6) for r in rubric_results if r is not None]
    official = protocol == EvalProtocol.official
    counted = counted_pairs(len(steps), replay.success_steps) if official else len(steps)
    keys = list(range(counted)) if official else steps[:counted]
    hvs: list[float | None] = list(mllm[:counted]) if available else [None] * counted
    score = TaskScore(
        total_steps=replay.total_steps,
        success_steps=replay.success_steps,
        pairs=[
            PairScore(step=k, ocr=o, dino=d, hvs=h) for k, o, d, h in zip(keys, ocr, dino, hvs, strict=False)
        ],
    )
    shown = hvs_as_zero(score) if protocol == EvalProtocol.official else score
    avg = [(m + d + o) / 3 for m, d, o in zip(mllm, dino, ocr, strict=True)] if mllm and dino and ocr else []
    return Evaluation(
        task_id=task.id,
        model=model,
        protocol=protocol,
        total_step=replay.total_steps,
        success_step=replay.success_steps,
        screenshot_paths_to_eval=[f"evalpoints/{k}.png" for k in steps],
        all_mllm_scores=mllm,
        all_dino_scores=dino,
        all_ocr_scores=ocr,
        all_avg_scores=avg,
        mllm_score=_mean(mllm),
        dino_score=_mean(dino),
        ocr_score=_mean(ocr),
        avg_score=_mean(avg),
        all_mllm_res=[_raw_answer(r) for r in rubric_results if r is not None],
        all_ocr_texts=measured.texts,
        assertion_results=_assertion_results(task, replay),
        no_page=replay.failure == "no_page",
        scored_steps=list(steps),
        pair_checkpoints=[Path(cp).name for cp in measured.checkpoints],
        counted_pairs=counted,
        hvs_available=available,
        ifs=score.ifs,
        lvs=score.lvs,
        hvs=score.hvs,
        vfs=shown.vfs,
        final=shown.final,
        lvs_only=score.lvs_only,
        backends=[*measured.backends, *_rubric_backend(rubric)],
        rubric_judge=None if rubric is None else rubric.name,
        rubric_results=[r for r in rubric_results if r is not None],
        rubric_errors=sum(1 for r in rubric_results if r is not None and r.error),
        replay=replay,
        undetermined_rate=replay.undetermined_rate(),
        unseen_steps=replay.unseen_steps(),
    )


def write_evaluation(evaluation: Evaluation, evidence: Path, out: Path) -> None:
    """Write ``out/evalpoints/<k>.png`` (every executed state), then ``out/eval.json`` (atomically)."""
    _write_evalpoints(evidence, out / "evalpoints", evaluation.replay)
    tmp = out / ".eval.json.tmp"
    tmp.write_text(json.dumps(evaluation.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / "eval.json")


def _assertion_results(task: Task, replay: Replay) -> list[dict[str, Any] | None]:
    by_index = {a.index: a for a in replay.actions}
    return [
        assertion_entry(task, by_index[i]) if i in by_index else None
        for i in range(len(task.record.action_sequence))
    ]


def _write_evalpoints(evidence: Path, points: Path, replay: Replay) -> None:
    """Copy every executed state ``evidence/step_<k>.png`` to ``evalpoints/<k>.png`` (the official layout)."""
    points.mkdir(parents=True, exist_ok=True)
    for k in range(replay.total_steps + 1):
        shot = evidence / f"step_{k}.png"
        if not shot.is_file():
            break
        shutil.copyfile(shot, points / f"{k}.png")


def _raw_answer(result: RubricResult) -> str:
    """The rubric answer as the official parser reads it (``Score: <n>/100`` at the end)."""
    parts = ", ".join(f"{name} {points}" for name, points in result.parts.items())
    return f"{result.reasoning}\n{parts}\nScore: {round(result.score)}/100".lstrip("\n")


async def _ocr_texts(
    metric: Any, images: list[tuple[Image.Image, Image.Image]], similarity: list[float]
) -> list[dict[str, Any]]:
    reader = text_reader(metric)
    if reader is None or not images:
        return []

    def read_all() -> list[dict[str, Any]]:
        return [
            {"checkpoint_text": reader(a), "screenshot_text": reader(b), "similarity": s}
            for (a, b), s in zip(images, similarity, strict=True)
        ]

    return await run_exclusive(metric, read_all)  # the engine's batching: under its limit and clock


async def _rubric(
    judge: RubricJudgeRole | None, pairs: list[tuple[int, Path, str]], evidence: Path
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


def _rubric_backend(judge: RubricJudgeRole | None) -> list[Backend]:
    if judge is None:
        return []
    return [Backend(metric="rubric", engine="pydantic-ai", model=judge.name, weights="judge model")]
