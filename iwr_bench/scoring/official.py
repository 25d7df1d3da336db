"""The official scripts' rules that concern scoring (protocol.md section 6), in one place.

- :func:`official_pair_states`: which replay states are scored, and with which checkpoint.
- :func:`assertion_entry`: one ``assertion_results`` entry in the official shape.
- :func:`counted_pairs`: how many pairs the official aggregation keeps (``success_step + 1``).
- :func:`aggregate`: per-model means under a protocol (official: tasks without a page left out,
  a missing HVS counted as 0, exactly as the official reporting does).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from iwr_bench.agents.judge.records import ActionRecord, Replay
from iwr_bench.dataset.layout import Task
from iwr_bench.protocol import EvalProtocol
from iwr_bench.scoring.formulas import PairScore, Summary, TaskScore, summarise

ENDED_PREFIX = frozenset({"assertion_failed", "judge_error"})
"""Failures of an action that was executed but whose assertion ended the successful prefix."""

HVS_MISSING_OFFICIAL = "HVS missing, counted 0 as the official aggregation does"
"""How reports label numbers of an official-protocol run without a rubric judge."""
HVS_MISSING_DEFAULT = "HVS missing: VFS = LVS alone (not paper-comparable)"
"""How reports label numbers of a default-protocol run without a rubric judge."""


def executed_states(replay: Replay) -> int:
    """How many actions were executed (the official ``evalpoints/<k>.png`` exist for k = 0..this)."""
    count = 0
    for action in replay.actions:
        if action.status == "ok" or (action.status == "failed" and action.failure in ENDED_PREFIX):
            count += 1
        else:
            break
    return count


def _first_no(actions: Sequence[ActionRecord]) -> int | None:
    return next((a.index for a in actions if a.status == "failed" and a.failure in ENDED_PREFIX), None)


def official_pair_states(task: Task, replay: Replay) -> list[tuple[int, Path]]:
    """(state k, checkpoint) per scored pair, in the official order.

    The list is state 0 plus, for each visually flagged action i (0-based) before the first
    assertion that ended the prefix, state i (the state BEFORE action i; for a flagged action
    that failed to execute, its pre-state is included when i <= the executed count). The k-th
    listed state is paired with ``checkpoints/step_<k>.png``; the list stops where that file is
    missing (the official script would raise there).
    """
    if replay.failure is not None:
        return []
    executed = executed_states(replay)
    stop = _first_no(replay.actions)
    states = [0]
    for i, action in enumerate(task.record.action_sequence):
        if stop is not None and i >= stop:
            break
        if action.official_flag and i <= executed:  # the flag as given ("false" is set there)
            states.append(i)
    out: list[tuple[int, Path]] = []
    for k, state in enumerate(states):
        checkpoint = task.checkpoints.get(k)
        if checkpoint is None:
            break
        out.append((state, checkpoint))
    return out


def assertion_entry(task: Task, action: ActionRecord) -> dict[str, Any] | None:
    """The official ``assertion_results`` entry of one action (None: no assertion was checked).

    ``result`` is "Yes" for a yes; "No" for any verdict that ended the successful prefix (a no,
    or an error or undetermined answer that the run's policy failed); "Error" for an error or
    undetermined answer that counted as a pass (the official scripts pass "Error"). ``response``
    (the judge's answer as text) and ``thinking`` (its reasoning) are there as in the official
    entry; our verdict, reasoning, judge and votes ride along under their own keys.
    """
    verdict = action.assertion
    if verdict is None:
        return None
    ended = action.status == "failed" and action.failure in ENDED_PREFIX
    result = "Yes" if verdict.verdict == "yes" else "No" if ended or verdict.verdict == "no" else "Error"
    return {
        "result": result,
        "assertion": task.record.action_sequence[action.index].logical_assertion,
        "index": action.index,
        "prev_img_path": f"evalpoints/{action.index}.png",
        "curr_img_path": f"evalpoints/{action.index + 1}.png",
        "response": f"{verdict.verdict}: {verdict.reasoning}",
        "thinking": verdict.reasoning,
        **verdict.model_dump(),
    }


def counted_pairs(n_pairs: int, success_step: int) -> int:
    """How many of a task's pairs the official aggregation keeps: the first ``success_step + 1``."""
    return min(n_pairs, success_step + 1)


def hvs_as_zero(score: TaskScore) -> TaskScore:
    """The task's score with a missing HVS counted as 0 (the official aggregation's reading)."""
    if not score.lvs_only:
        return score
    pairs = [PairScore(step=p.step, ocr=p.ocr, dino=p.dino, hvs=0.0) for p in score.pairs]
    return TaskScore(total_steps=score.total_steps, success_steps=score.success_steps, pairs=pairs)


def aggregate(
    scores: Sequence[tuple[TaskScore, bool]], protocol: EvalProtocol
) -> tuple[Summary | None, int, bool]:
    """Per-model numbers over ``(score, page missing)`` pairs under ``protocol``.

    Returns (summary or None when nothing counts, tasks left out, HVS missing). Default: every
    task counts (a missing page scores 0) and without HVS the VFS is LVS alone. Official: tasks
    whose page is missing (no ``index.html``, or a failed generation, for which the official
    generator writes none) are left out of the means, and a missing HVS is counted as 0.
    """
    if protocol == EvalProtocol.official:
        kept = [s for s, missing in scores if not missing]
        left_out = len(scores) - len(kept)
        hvs_missing = bool(kept) and all(s.lvs_only for s in kept)
        kept = [hvs_as_zero(s) for s in kept]
    else:
        kept = [s for s, _ in scores]
        left_out = 0
        hvs_missing = bool(kept) and all(s.lvs_only for s in kept)
    return (summarise(kept) if kept else None), left_out, hvs_missing
