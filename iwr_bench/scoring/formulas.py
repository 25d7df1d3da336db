"""IWR-Bench scores (protocol.md section 4): IFS, LVS, HVS, VFS and Final.

Per-task values are fractions in [0, 1]; benchmark tables show means over tasks times 100.
When no rubric judge is configured HVS is *unavailable* (None), never 0: VFS is then computed
from LVS alone and flagged ``lvs_only``, which is not comparable with the paper's VFS.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from pydantic import BaseModel, Field, model_validator

IFS_WEIGHT = 0.7
VFS_WEIGHT = 0.3


def ifs(success_steps: int, total_steps: int) -> float:
    """Length of the successful prefix over the number of actions (0 for a task with none)."""
    if total_steps <= 0:
        return 0.0
    if not 0 <= success_steps <= total_steps:
        raise ValueError(f"success_steps {success_steps} outside 0..{total_steps}")
    return success_steps / total_steps


def lvs(ocr: float, dino: float) -> float:
    """Low-level visual score of one pair: mean of OCR and DINO similarity."""
    return (ocr + dino) / 2


def vfs_from(lvs_value: float, hvs_value: float) -> float:
    """Visual fidelity from low- and high-level scores: their mean."""
    return 0.5 * lvs_value + 0.5 * hvs_value


def final_from(ifs_value: float, vfs_value: float) -> float:
    """Final = 0.7 IFS + 0.3 VFS."""
    return IFS_WEIGHT * ifs_value + VFS_WEIGHT * vfs_value


class ScoreValues(BaseModel):
    """The five scores, declared once: one page's (:class:`Scores`, an evaluation, a store row, a
    job's end event: fractions 0-1) or their means over pages (:class:`Summary`: x100)."""

    ifs: float
    """Interaction fidelity: the successful prefix over the actions."""
    lvs: float
    """Low-level visual score: mean of (OCR + DINO) / 2 over the counted pairs (0 without pairs)."""
    hvs: float | None
    """High-level visual score: the rubric judge's mean, None when no rubric judge ran."""
    vfs: float
    """Visual fidelity: 0.5 LVS + 0.5 HVS per pair, or LVS alone when ``lvs_only``."""
    final: float
    """0.7 IFS + 0.3 VFS."""
    lvs_only: bool
    """No rubric judge ran: VFS (and so Final) is LVS alone, not comparable with the paper."""

    @model_validator(mode="before")
    @classmethod
    def _older_records(cls, data: Any) -> Any:
        """A job's end event stored before it carried ``lvs_only``: no HVS means LVS alone."""
        if isinstance(data, dict) and "lvs_only" not in data and "ifs" in data:
            return {**data, "lvs_only": data.get("hvs") is None}  # pyright: ignore[reportUnknownMemberType]
        return data  # pyright: ignore[reportUnknownVariableType]


class Scores(ScoreValues):
    """One judged (task, model) page's scores (fractions 0-1) and its steps: what the store's row,
    the job's end event and the terminal UI carry."""

    total_steps: int
    """Number of actions."""
    success_steps: int
    """Length of the successful prefix."""


class PairScore(BaseModel):
    """Scores of one (checkpoint, replay screenshot) pair."""

    step: int
    """0 for the initial state, k for the state after action k (1-based)."""
    ocr: float
    """OCR text similarity."""
    dino: float
    """Image-embedding cosine (DINOv2 or a labelled substitute)."""
    hvs: float | None = None
    """Rubric score / 100, or None when no rubric judge ran."""

    @property
    def lvs(self) -> float:
        """(OCR + DINO) / 2."""
        return lvs(self.ocr, self.dino)

    @property
    def vfs(self) -> float:
        """0.5 LVS + 0.5 HVS, or LVS alone when HVS is unavailable."""
        return self.lvs if self.hvs is None else vfs_from(self.lvs, self.hvs)


class TaskScore(BaseModel):
    """Scores of one (task, model) pair."""

    total_steps: int
    """Number of actions."""
    success_steps: int
    """Length of the successful prefix."""
    pairs: list[PairScore] = Field(default_factory=list)
    """Scored screenshot pairs (initial state plus flagged actions inside the prefix)."""

    @property
    def ifs(self) -> float:
        """Interaction fidelity."""
        return ifs(self.success_steps, self.total_steps)

    @property
    def lvs_only(self) -> bool:
        """True when no pair has an HVS, so VFS is LVS alone."""
        return all(p.hvs is None for p in self.pairs)

    @property
    def lvs(self) -> float:
        """Mean LVS over pairs (0 without pairs)."""
        return fmean(p.lvs for p in self.pairs) if self.pairs else 0.0

    @property
    def hvs(self) -> float | None:
        """Mean HVS over pairs, None when unavailable."""
        values = [p.hvs for p in self.pairs if p.hvs is not None]
        if values and len(values) != len(self.pairs):
            raise ValueError("HVS is present for some pairs and missing for others")
        return fmean(values) if values else (None if self.pairs else 0.0)

    @property
    def vfs(self) -> float:
        """Mean over pairs of the pair VFS (0 without pairs)."""
        if not self.pairs:
            return 0.0
        if not self.lvs_only and any(p.hvs is None for p in self.pairs):
            raise ValueError("HVS is present for some pairs and missing for others")
        return fmean(p.vfs for p in self.pairs)

    @property
    def final(self) -> float:
        """0.7 IFS + 0.3 VFS."""
        return final_from(self.ifs, self.vfs)

    def as_scores(self) -> Scores:
        """The page's scores as one record."""
        return Scores(
            ifs=self.ifs,
            lvs=self.lvs,
            hvs=self.hvs,
            vfs=self.vfs,
            final=self.final,
            lvs_only=self.lvs_only,
            total_steps=self.total_steps,
            success_steps=self.success_steps,
        )


class Summary(ScoreValues):
    """Benchmark numbers over tasks: each score's mean over pages x100 (IFS the macro mean), the
    published table's columns plus ours."""

    tasks: int
    """Tasks counted (including those with no page, scored 0)."""
    ifs_micro: float
    """Micro IFS: successful actions over all actions."""


def summarise(scores: Sequence[TaskScore]) -> Summary:
    """Aggregate per-task scores into the table row."""
    if not scores:
        return Summary(tasks=0, ifs=0, ifs_micro=0, lvs=0, hvs=None, vfs=0, final=0, lvs_only=True)
    hvs_values = [s.hvs for s in scores if s.pairs]
    available = [h for h in hvs_values if h is not None]
    if available and len(available) != len(hvs_values):
        raise ValueError("HVS is present for some tasks and missing for others")
    total = sum(s.total_steps for s in scores)
    return Summary(
        tasks=len(scores),
        ifs=100 * fmean(s.ifs for s in scores),
        ifs_micro=100 * (sum(s.success_steps for s in scores) / total if total else 0.0),
        lvs=100 * fmean(s.lvs for s in scores),
        hvs=100 * fmean(s.hvs or 0.0 for s in scores) if available else None,
        vfs=100 * fmean(s.vfs for s in scores),
        final=100 * fmean(s.final for s in scores),
        lvs_only=not available,
    )
