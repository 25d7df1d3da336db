"""Rows of the ``iwr judges eval`` tables, for the terminal (``print_rows``) and the HTML page.

Shares are shown in percent with one decimal; an interval as ``low–high`` (no space, so a narrow
table never breaks it) in the same unit as its number; a p-value with three significant digits.
"""

from __future__ import annotations

from iwr_bench.report.judge_eval import Breakdown, LabReport
from iwr_bench.report.lab_stats import Interval
from iwr_bench.report.tables import Row


def pct(value: float | None) -> float | None:
    """A share in percent, one decimal (None stays None)."""
    return None if value is None else round(100 * value, 1)


def ci_pct(interval: Interval | None) -> str | None:
    """An interval of a share, in percent."""
    return None if interval is None else f"{100 * interval.low:.1f}–{100 * interval.high:.1f}"


def ci_plain(interval: Interval | None) -> str | None:
    """An interval of a coefficient (kappa)."""
    return None if interval is None else f"{interval.low:.3f}–{interval.high:.3f}"


def ci_name(report: LabReport) -> str:
    """The interval columns' name: ``95% CI``."""
    return f"{100 * report.statistics.level:g}% CI"


def method_note(report: LabReport) -> str:
    """One line saying how the intervals were drawn."""
    s = report.statistics
    return f"{ci_name(report)}: {s.method}, {s.resamples} resamples, seed {s.seed}"


def score_rows(report: LabReport) -> list[Row]:
    """One row per design."""
    ci = ci_name(report)
    return [
        {
            "design": s.design,
            "references at IFS 100": f"{s.references_ok}/{s.references}",
            "mutants at step": f"{s.mutants_at_step}/{s.mutants}",
            "mutants at step and reason": f"{s.mutants_ok}/{s.mutants}",
            "harmless mutants at IFS 100": f"{s.harmless_ok}/{s.harmless}",
            "accuracy %": pct(s.accuracy),
            f"accuracy {ci}": ci_pct(s.accuracy_ci),
            "per-action accuracy %": pct(s.action_accuracy),
            f"per-action {ci}": ci_pct(s.action_accuracy_ci),
            "deciding actions": s.deciding_actions,
            "step error": round(s.mean_abs_step_error, 2),
            "undetermined %": pct(s.undetermined_rate),
            "errors %": pct(s.error_rate),
            "crashed": s.crashed,
            "s per action": None if s.seconds_per_action is None else round(s.seconds_per_action, 2),
            "usd per action": "unpriced" if s.cost_per_action is None else f"{s.cost_per_action:.6f}",
            "changed on repeat %": pct(s.changed_rate),
        }
        for s in report.scores
    ]


def undetermined_rows(report: LabReport) -> list[Row]:
    """Per design: accuracy with ``undetermined`` answers counted as judged, as wrong, and left out."""
    ci = ci_name(report)
    return [
        {
            "design": s.design,
            "undetermined counts as": s.undetermined_policy,
            "undetermined assertions %": pct(s.undetermined_rate),
            "cases leaning on undetermined": f"{s.undetermined_cases}/{s.cases}",
            "accuracy as judged %": pct(s.accuracy),
            "accuracy, undetermined wrong %": pct(s.strict_accuracy),
            f"undetermined wrong {ci}": ci_pct(s.strict_accuracy_ci),
            "decided accuracy %": pct(s.decided_accuracy),
            f"decided {ci}": ci_pct(s.decided_accuracy_ci),
            "decided cases": s.cases - s.undetermined_cases,
        }
        for s in report.scores
    ]


def _breakdown_rows(report: LabReport, what: str, unit: str, by_type: bool) -> list[Row]:
    ci = ci_name(report)
    rows: list[Row] = []
    for s in report.scores:
        groups: list[Breakdown] = s.by_action_type if by_type else s.by_kind
        rows += [
            {
                "design": s.design,
                what: b.group,
                unit: b.count,
                "right": b.correct,
                "accuracy %": pct(b.accuracy),
                ci: ci_pct(b.accuracy_ci),
            }
            for b in groups
        ]
    return rows


def kind_rows(report: LabReport) -> list[Row]:
    """Per design and case kind: case accuracy."""
    return _breakdown_rows(report, "kind", "cases", by_type=False)


def action_type_rows(report: LabReport) -> list[Row]:
    """Per design and action type: per-action accuracy over deciding actions."""
    return _breakdown_rows(report, "action type", "deciding actions", by_type=True)


def agreement_rows(report: LabReport) -> list[Row]:
    """One row per pair of designs: per-action agreement."""
    return [
        {
            "A": p.a,
            "B": p.b,
            "actions": p.actions,
            "agreement %": pct(p.agreement),
            "kappa": None if p.kappa is None else round(p.kappa, 3),
            "disagreements": len(p.disagreements),
        }
        for p in report.agreements
    ]


def mcnemar_rows(report: LabReport) -> list[Row]:
    """One row per pair of designs: McNemar's exact test on case accuracy."""
    return [
        {
            "A": m.a,
            "B": m.b,
            "cases": m.cases,
            "A right": m.a_correct,
            "B right": m.b_correct,
            "b: A right, B wrong": m.a_only,
            "c: A wrong, B right": m.b_only,
            "p (exact)": f"{m.p_value:.3g}",
        }
        for m in report.mcnemar
    ]


def human_rows(report: LabReport) -> list[Row]:
    """One row per design: agreement with the human labels."""
    ci = ci_name(report)
    return [
        {
            "design": h.design,
            "labelled": h.labelled,
            "matched": h.matched,
            "agreed": h.both_pass + h.both_fail,
            "agreement %": pct(h.agreement),
            f"agreement {ci}": ci_pct(h.agreement_ci),
            "kappa": None if h.kappa is None else round(h.kappa, 3),
            f"kappa {ci}": ci_plain(h.kappa_ci),
            "person pass, design fail": h.human_pass_design_fail,
            "person fail, design pass": h.human_fail_design_pass,
        }
        for h in report.human
    ]


def wrong_rows(report: LabReport) -> list[Row]:
    """The cases a design got wrong (first judging): expected against found, and the action there."""
    return [
        {
            "design": w.design,
            "task": w.task_id,
            "case": w.case,
            "expected": w.expected,
            "found": w.found,
            "action": None if w.index is None else f"#{w.index} {w.action_type}".strip(),
            "description": w.description or None,
            "assertion": w.assertion or None,
        }
        for w in report.wrong
    ]
