"""Every recorded task proves itself: its reference page, judged offline, must pass its own task.

The reference bundle is replayed with the offline judges (heuristic grounder and assertion
judge): IFS must be 100, no request may fail (a 404 or a request the sandbox blocked), and every
checkpoint's visual score (LVS: mean of OCR text similarity and image-embedding cosine) must be at
least ``min_visual`` against its own recording. Recording is deterministic, so the screenshots are
usually pixel-identical to the checkpoints, or differ only by raster noise within
:data:`~iwr_bench.metrics.hashing.RASTER_NOISE`, and score 1.0 without running OCR or the embedder
(see :class:`~iwr_bench.metrics.pair.CachedMetric`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio.to_thread

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.judge.records import Replay
from iwr_bench.dataset.layout import REFERENCE_DIR, Task
from iwr_bench.dataset.recorder import OracleProof
from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.embed import EmbedderUnavailable
from iwr_bench.metrics.hashing import as_image, raster_identical
from iwr_bench.metrics.pair import CachedMetric, effnet_metric, ocr_metric
from iwr_bench.scoring.evaluation import scored_pairs
from iwr_bench.scoring.formulas import lvs
from iwr_bench.tools.pool import PagePool

FAILED_LOAD = "Failed to load resource"
"""Start of the browser's log line for a request answered with an error status."""


class OracleProver:
    """Judges a task's own reference page offline (a :class:`~iwr_bench.dataset.recorder.Prover`)."""

    def __init__(
        self, min_visual: float = 0.98, device: str = "cpu", store: MetricCache | None = None
    ) -> None:
        self.min_visual = min_visual
        self.ocr = CachedMetric(ocr_metric(device=device), store)
        self.embed = CachedMetric(effnet_metric(device=device), store)

    async def __call__(
        self, task: Task, pool: PagePool, *, visual: bool = True, evidence: Path | None = None
    ) -> OracleProof:
        """Replay the reference page of ``task`` and check IFS, requests and (unless ``visual`` is
        false) every checkpoint. With ``evidence``, the replay's screenshots and its report
        (``replay.json``: every action's grounding, verdict and reasoning) are kept there."""
        executor = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
        with tempfile.TemporaryDirectory(prefix="iwr-proof-") as tmp:
            keep = evidence is not None
            evidence = evidence or Path(tmp)
            evidence.mkdir(parents=True, exist_ok=True)
            replay = await executor.replay(task, task.folder / REFERENCE_DIR, evidence)
            if keep:
                (evidence / "replay.json").write_text(replay.model_dump_json(indent=1))
            identical = await anyio.to_thread.run_sync(_pixel_identical, task, replay, evidence)
            scores: dict[int, float] = {}
            unscored: list[str] = []
            if visual:
                scores, unscored = await self._checkpoint_scores(task, replay, evidence, identical)
        failed = [e for e in replay.console_errors if e.startswith(FAILED_LOAD)]
        if replay.blocked_requests:
            failed.append(f"{replay.blocked_requests} request(s) blocked by the sandbox")
        problems = _action_problems(task, replay) + [f"request failed: {f}" for f in failed] + unscored
        problems += [
            f"checkpoint step_{step} ({_after(task, step)}) scores {score:.3f} against its recording "
            f"(needs {self.min_visual:g})"
            for step, score in scores.items()
            if score < self.min_visual
        ]
        ifs = replay.success_steps / replay.total_steps if replay.total_steps else 0.0
        return OracleProof(
            ifs=ifs,
            checkpoint_scores=scores,
            pixel_identical=identical,
            failed_requests=failed,
            problems=problems,
        )

    async def _checkpoint_scores(
        self, task: Task, replay: Replay, evidence: Path, identical: dict[int, bool]
    ) -> tuple[dict[int, float], list[str]]:
        """Scores by step; when a pair differs and the metrics cannot run here, a problem per such pair."""
        pairs = scored_pairs(task, replay)
        images = [
            (as_image(cp.read_bytes()), as_image((evidence / shot).read_bytes())) for _, cp, shot in pairs
        ]
        try:
            ocr = await self.ocr(images)
            embed = await self.embed(images)
        except (ImportError, EmbedderUnavailable) as exc:
            differing = [step for step, same in identical.items() if not same]
            return {}, [
                f"checkpoint step_{step} ({_after(task, step)}) is not pixel-identical to its recording "
                f"(beyond raster noise) and the visual metrics cannot run here ({type(exc).__name__}: {exc})"
                for step in differing
            ]
        return {step: round(lvs(o, e), 4) for (step, _, _), o, e in zip(pairs, ocr, embed, strict=True)}, []


def _pixel_identical(task: Task, replay: Replay, evidence: Path) -> dict[int, bool]:
    """Whether each scored checkpoint's screenshot has the recorded pixels, by step: exactly, or up
    to raster noise (:data:`~iwr_bench.metrics.hashing.RASTER_NOISE`, the bound the metric cache
    scores 1.0 without a model)."""

    def same(checkpoint: Path, shot: Path) -> bool:
        return raster_identical(as_image(checkpoint.read_bytes()), as_image(shot.read_bytes()))

    return {step: same(cp, evidence / shot) for step, cp, shot in scored_pairs(task, replay)}


def _action_problems(task: Task, replay: Replay) -> list[str]:
    if replay.failure is not None:
        return [f"the reference page did not run: {replay.failure}: {replay.message}"]
    actions = task.record.action_sequence
    return [
        f"step {a.index + 1} ({a.type} {actions[a.index].parameters.description!r}) failed: "
        f"{a.failure}: {a.message}"
        for a in replay.actions
        if a.status == "failed"
    ][:1]


def _after(task: Task, step: int) -> str:
    if step == 0:
        return "the initial state"
    action = task.record.action_sequence[step - 1]
    return f"after step {step}, {action.type} {action.parameters.description!r}"
