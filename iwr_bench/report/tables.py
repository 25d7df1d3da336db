"""The report's tables: leaderboard, breakdowns and run comparisons, as plain rows of values.

Numbers are the paper's: means over judged tasks, x100, two decimals. Each row names the metric
backends behind it; a row whose numbers came from a substitute backend says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from iwr_bench.agents.judge.records import undetermined_rate
from iwr_bench.protocol import EvalProtocol
from iwr_bench.report.data import Result, RunData, TaskInfo
from iwr_bench.scoring.official import HVS_MISSING_DEFAULT, HVS_MISSING_OFFICIAL, aggregate

Row = dict[str, Any]

LEADERBOARD_COLUMNS = (
    "model",
    "tasks",
    "judged",
    "LVS",
    "HVS",
    "IFS",
    "VFS",
    "Final",
    "IFS micro",
    "failures",
    "judge errors",
    "pages missing",
    "cost usd",
    "backends",
    "paper comparable",
)

BREAKDOWNS: dict[str, Callable[[TaskInfo], str]] = {
    "interaction level": lambda t: t.interaction,
    "visual level": lambda t: t.visual,
    "domain": lambda t: t.domain,
    "device": lambda t: t.device,
}
"""Task groupings (by interaction level L1-L4, visual level V1-V4, domain, desktop/mobile)."""


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _backends(run: RunData, model: str) -> tuple[str, bool]:
    labels = sorted({label for r in run.judged(model) for label in r.backends.values()})
    substitute = any("(substitute)" in label for label in labels)
    return ", ".join(labels), substitute


def _means(run: RunData, model: str, task_ids: list[int]) -> Row:
    judged = run.judged(model, task_ids)
    s, left_out, hvs_missing = aggregate(
        [(r.score, r.no_page) for r in judged if r.score is not None], run.protocol
    )
    return {
        "judged": len(judged),
        "left out": left_out,
        "hvs_missing": hvs_missing,
        "LVS": _r(s.lvs) if s else None,
        "HVS": _r(s.hvs) if s else None,
        "IFS": _r(s.ifs) if s else None,
        "VFS": _r(s.vfs) if s else None,
        "Final": _r(s.final) if s else None,
        "IFS micro": _r(s.ifs_micro) if s else None,
        "lvs_only": s.lvs_only if s else True,
    }


def leaderboard(run: RunData) -> list[Row]:
    """One row per model, best Final first."""
    rows: list[Row] = []
    for model in run.models:
        own = run.tasks_of(model)
        results = [run.results[(model, t)] for t in own]
        failures: dict[str, int] = {}
        for r in results:
            if r.failure and r.infra:
                failures[r.failure] = failures.get(r.failure, 0) + 1
        backends, substitute = _backends(run, model)
        means = _means(run, model, own)
        rows.append(
            {
                "model": model,
                "protocol": run.protocol.value,
                "tasks": len(own),
                **{k: v for k, v in means.items() if k not in ("lvs_only", "hvs_missing")},
                "failures": dict(sorted(failures.items())),
                "judge errors": sum(r.judge_errors for r in results),
                "undetermined %": _undetermined_percent(results),
                # pages whose score rests on controls no person could see or reach (official protocol)
                "unseen pages": sum(
                    1 for r in results if r.evaluation is not None and r.evaluation.replay.unseen_steps()
                ),
                "pages missing": sum(
                    1
                    for r in results
                    if r.failure in ("no_page", "generation_error")
                    or (r.failure or "").startswith("generation")
                ),
                "cost usd": round(sum(r.cost_usd for r in results), 6),
                "backends": backends,
                "paper comparable": not substitute and not means["hvs_missing"],
                "HVS note": hvs_note(run.protocol) if means["hvs_missing"] else "",
            }
        )
    rows.sort(key=lambda row: -(row["Final"] if row["Final"] is not None else -1.0))
    return rows


def hvs_note(protocol: EvalProtocol) -> str:
    """What the numbers of a run without a rubric judge mean under ``protocol``."""
    return HVS_MISSING_OFFICIAL if protocol == EvalProtocol.official else HVS_MISSING_DEFAULT


def _undetermined_percent(results: list[Result]) -> float | None:
    """Share (x100) of the judged assertions the assertion judge could not decide (from eval.json)."""
    rate = undetermined_rate(
        a.assertion.verdict if a.assertion else None
        for r in results
        if r.evaluation is not None
        for a in r.evaluation.replay.actions
    )
    return None if rate is None else round(100 * rate, 1)


def breakdown(run: RunData, name: str) -> list[Row]:
    """Per group of tasks (e.g. each interaction level) and model: n, IFS, VFS, Final."""
    key = BREAKDOWNS[name]
    groups: dict[str, list[int]] = {}
    for tid in run.task_ids:
        groups.setdefault(key(run.tasks[tid]), []).append(tid)
    backends = {model: _backends(run, model)[0] for model in run.models}
    rows: list[Row] = []
    for group in sorted(groups):
        for model in run.models:
            if not run.tasks_of(model, groups[group]):
                continue
            means = _means(run, model, groups[group])
            rows.append(
                {
                    "breakdown": name,
                    "group": group,
                    "model": model,
                    "tasks": len(run.tasks_of(model, groups[group])),
                    "judged": means["judged"],
                    "left out": means["left out"],
                    "IFS": means["IFS"],
                    "VFS": means["VFS"],
                    "Final": means["Final"],
                    "backends": backends[model],
                }
            )
    return rows


def action_types(run: RunData) -> list[Row]:
    """Per action type and model: how many actions of that type there were and how many succeeded."""
    counts: dict[tuple[str, str], list[int]] = {}
    for (model, _tid), r in run.results.items():
        if not r.judged or r.evaluation is None:
            continue
        for action in r.evaluation.replay.actions:
            bucket = counts.setdefault((action.type, model), [0, 0, 0])
            bucket[0] += 1
            bucket[1] += action.status == "ok"
            bucket[2] += action.status == "failed"
    rows: list[Row] = []
    order = {m: i for i, m in enumerate(run.models)}
    for (kind, model), (total, ok, failed) in sorted(
        counts.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])
    ):
        rows.append(
            {
                "breakdown": "action type",
                "group": kind,
                "model": model,
                "actions": total,
                "succeeded": ok,
                "failed here": failed,
                "success rate": round(100 * ok / total, 2) if total else None,
            }
        )
    return rows


def all_breakdowns(run: RunData) -> list[Row]:
    """Every task breakdown followed by the action-type one."""
    rows: list[Row] = []
    for name in BREAKDOWNS:
        rows.extend(breakdown(run, name))
    return rows + action_types(run)


COMPARED_SETTINGS = ("protocol", "judges", "metric backends", "policies", "tasks")
"""Settings two runs must share for B - A to be shown (a run of one protocol is never subtracted
from a run of the other)."""


def differences(a: RunData, b: RunData) -> list[str]:
    """Which settings differ between two runs (empty when their numbers are comparable)."""
    return [key for key in COMPARED_SETTINGS if a.setting(key) != b.setting(key)]


def compare(a: RunData, b: RunData) -> list[Row]:
    """Per model in either run: A's and B's numbers, and B - A where the runs are comparable."""
    board_a = {row["model"]: row for row in leaderboard(a)}
    board_b = {row["model"]: row for row in leaderboard(b)}
    differ = differences(a, b)
    rows: list[Row] = []
    for model in list(dict.fromkeys([*a.models, *b.models])):
        ra, rb = board_a.get(model), board_b.get(model)
        row: Row = {"model": model}
        notes = list(differ)
        if ra is None or rb is None:
            notes.append(f"only in run {'B' if ra is None else 'A'}")
        elif ra["backends"] != rb["backends"] and "metric backends" not in notes:
            notes.append("metric backends")
        for col in ("IFS", "VFS", "Final", "LVS", "HVS"):
            va = ra[col] if ra else None
            vb = rb[col] if rb else None
            row[f"{col} A"], row[f"{col} B"] = va, vb
            comparable = not notes and va is not None and vb is not None
            row[f"{col} delta"] = (
                round(vb - va, 2) if comparable and va is not None and vb is not None else None
            )
        row["comparable"] = not notes
        row["differs"] = ", ".join(notes)
        rows.append(row)
    return rows
