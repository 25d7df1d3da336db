"""Per-task counts and suite totals, for ``iwr tasks list``."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from iwr_bench.dataset.layout import Task


class TaskSummary(BaseModel):
    """Counts for one task."""

    id: int
    """Task id."""
    actions: int
    """Number of actions."""
    flagged: int
    """Actions with a visual checkpoint."""
    assertions: int
    """Actions with a logical assertion."""
    action_types: dict[str, int]
    """Actions per type."""
    level: str
    """Interaction level (L1-L4)."""
    visual_level: str
    """Visual level (V1-V4)."""
    domain: str
    """Site domain."""
    resolution: str
    """Viewport ``WxH``."""
    environment: str
    """desktop or mobile."""
    assets: int
    """Asset files."""
    checkpoints: int
    """Checkpoint images found."""

    @classmethod
    def of(cls, task: Task) -> TaskSummary:
        """Summarise one task."""
        rec = task.record
        return cls(
            id=rec.id,
            actions=len(rec.action_sequence),
            flagged=len(rec.flagged_indices),
            assertions=rec.assertion_count,
            action_types=dict(Counter(a.type for a in rec.action_sequence)),
            level=rec.classification.level or rec.classification.interaction_complexity,
            visual_level=rec.classification.visual_level or rec.classification.visual_complexity,
            domain=rec.classification.domain,
            resolution=str(task.resolution),
            environment=rec.recording_details.environment,
            assets=len(task.asset_files),
            checkpoints=len(task.checkpoints),
        )


class SuiteTotals(BaseModel):
    """Totals over a task set (the published suite: 113 tasks, 1,001 actions, 620 flagged, 403 assertions)."""

    tasks: int
    """Number of tasks."""
    actions: int
    """Actions over all tasks."""
    flagged: int
    """Visually flagged actions."""
    assertions: int
    """Actions with a logical assertion."""
    mobile: int
    """Tasks recorded on mobile."""
    action_types: dict[str, int]
    """Actions per type."""
    levels: dict[str, int]
    """Tasks per interaction level."""
    visual_levels: dict[str, int]
    """Tasks per visual level."""
    domains: dict[str, int]
    """Tasks per domain."""

    @classmethod
    def of(cls, rows: list[TaskSummary]) -> SuiteTotals:
        """Add up task summaries."""
        types: Counter[str] = Counter()
        for r in rows:
            types.update(r.action_types)
        return cls(
            tasks=len(rows),
            actions=sum(r.actions for r in rows),
            flagged=sum(r.flagged for r in rows),
            assertions=sum(r.assertions for r in rows),
            mobile=sum(r.environment == "mobile" for r in rows),
            action_types=dict(sorted(types.items())),
            levels=dict(sorted(Counter(r.level or "?" for r in rows).items())),
            visual_levels=dict(sorted(Counter(r.visual_level or "?" for r in rows).items())),
            domains=dict(sorted(Counter(r.domain or "?" for r in rows).items())),
        )
