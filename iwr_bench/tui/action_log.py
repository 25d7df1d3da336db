"""The actions of a run's jobs as a log: one row per action, and the filters over it.

A filter is a few words, all of which a row must match (none, or ``all``: every row):

- ``pass``, ``fail``, ``undetermined``, ``error``: the assertion verdict (yes, no, undetermined,
  error);
- ``failed``: the action failed; ``failure:<class>`` (or the class alone): it failed with that
  class (``element_not_found``, ``no_scroll``, ...);
- ``disagree``: the designs judging the same page disagree on it (see :func:`disagreements`);
- any other word: a part of the task id, model, design, description or failure.

:func:`presets` lists the filters the log view cycles through. No Textual here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from iwr_bench.engine.views import ActionView, JobView

VERDICTS = {"pass": "yes", "fail": "no", "undetermined": "undetermined", "error": "error"}
"""Filter words for the assertion verdicts."""

Outcome = tuple[str, str | None, str | None]
"""What a design made of an action: status, failure class and verdict."""


@dataclass(frozen=True)
class ActionRow:
    """One action of one job."""

    job: JobView
    action: ActionView
    disagrees: bool = False
    """Another design judging the same page has a different outcome for this action."""

    @property
    def key(self) -> str:
        """Row key: ``<job key>#<action index>``."""
        return f"{self.job.key}#{self.action.index}"

    def cells(self) -> tuple[str, ...]:
        """Task, model, design, action number, status, failure, verdict (``≠``: designs disagree),
        description (last: it is the longest)."""
        a = self.action
        verdict = a.verdict or ""
        return (
            str(self.job.task_id),
            self.job.model,
            self.job.design,
            str(a.index + 1),
            a.status,
            a.failure or "",
            f"{verdict} ≠" if self.disagrees else verdict,
            a.description,
        )


def outcome(action: ActionView) -> Outcome:
    """Status, failure class and verdict."""
    return (action.status, action.failure, action.verdict)


def disagreements(jobs: Iterable[JobView]) -> set[str]:
    """Row keys of the actions on which designs disagree.

    Two jobs disagree on an action when they judge the same task and model with different designs
    and that action's outcome (status, failure class, verdict) differs. Actions still running, and
    actions one design never reached, are not compared.
    """
    groups: dict[tuple[int, str, int], list[tuple[str, str, Outcome]]] = {}
    for job in jobs:
        for action in job.actions:
            if action.status != "running":
                row = ActionRow(job, action)
                groups.setdefault((job.task_id, job.model, action.index), []).append(
                    (row.key, job.design, outcome(action))
                )
    keys: set[str] = set()
    for members in groups.values():
        designs = {design for _, design, _ in members}
        if len(designs) > 1 and len({o for _, _, o in members}) > 1:
            keys.update(key for key, _, _ in members)
    return keys


def action_rows(jobs: Iterable[JobView]) -> list[ActionRow]:
    """Every action of every job, by task, model and design, each marked when designs disagree on it."""
    jobs = sorted(jobs, key=lambda j: (j.task_id, j.model, j.design))
    disagree = disagreements(jobs)
    rows = [ActionRow(job, action) for job in jobs for action in job.actions]
    return [ActionRow(r.job, r.action, r.key in disagree) for r in rows]


def _keeps(word: str, row: ActionRow) -> bool:
    a = row.action
    if word == "all":
        return True
    if word in VERDICTS:
        return a.verdict == VERDICTS[word]
    if word == "failed":
        return a.status == "failed"
    if word == "disagree":
        return row.disagrees
    if word.startswith("failure:"):
        return a.failure == word.removeprefix("failure:")
    hay = " ".join((str(row.job.task_id), row.job.model, row.job.design, a.description, a.failure or ""))
    return word in hay.lower()


def keeps(text: str, row: ActionRow) -> bool:
    """Whether ``row`` matches every word of the filter ``text`` (see the module doc)."""
    return all(_keeps(word, row) for word in text.lower().split())


def presets(rows: Iterable[ActionRow]) -> list[str]:
    """The filters to cycle through: all, each verdict, failed, each failure class seen, disagree."""
    failures = sorted({r.action.failure for r in rows if r.action.failure})
    return ["", *VERDICTS, "failed", *(f"failure:{f}" for f in failures), "disagree"]


def next_preset(current: str, rows: Iterable[ActionRow]) -> str:
    """The preset after ``current``: after the last comes all, after a typed filter the first verdict."""
    options = presets(rows)
    current = current.strip().lower()
    if current not in options:
        return options[1]
    return options[(options.index(current) + 1) % len(options)]
