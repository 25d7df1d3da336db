"""How good is a judge design: the numbers ``iwr judges eval`` reports.

Input: :class:`~iwr_bench.agents.judge.lab.CaseResult` records (each case judged by each design,
once per repeat). Per design (:class:`DesignScore`), from its first judging: references judged at
IFS 100, mutants failing at their expected step (and with the expected reason), accuracy (cases
entirely right: step and reason), mean absolute step error (the successful prefix found against
the expected one, a page that must pass counting its number of actions), and the undetermined and
error rates of the judged assertions. Cost and wall time per executed action are over every
repeat. With repeats, the share of actions whose verdict changed between them.

Between two designs (:class:`Agreement`), on the first judging: each action that both executed
(status ok or failed) is a pass or a fail for each; agreement is the share that match and Cohen's
kappa corrects it for chance, ``(p_o - p_e) / (1 - p_e)`` with ``p_e`` the sum over pass/fail of
the product of the two designs' shares (None when ``p_e`` is 1: both gave one answer throughout).
Every action where they differ is listed with both reasonings and screenshots.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from pydantic import BaseModel, Field

from iwr_bench.agents.judge.lab import ActionOutcome, CaseResult, DesignSpec, Usage
from iwr_bench.report.tables import Row


class DesignScore(BaseModel):
    """One design's numbers."""

    design: str
    """Design label."""
    references: int
    """Reference pages judged (cases expected to pass every action)."""
    references_ok: int
    """Of those, judged at IFS 100."""
    mutants: int
    """Mutants with an expected first failure."""
    mutants_at_step: int
    """Of those, first failing at the expected step (any reason)."""
    mutants_ok: int
    """Of those, first failing at the expected step with the expected reason."""
    harmless: int
    """Mutants that must still pass every action (e.g. restyled pages)."""
    harmless_ok: int
    """Of those, judged at IFS 100."""
    cases: int
    """All cases (references, mutants that must fail, mutants that must pass)."""
    correct: int
    """Cases entirely right."""
    accuracy: float
    """``correct / cases``."""
    mean_abs_step_error: float
    """Mean over cases of |successful prefix found - expected|, in actions."""
    undetermined_rate: float | None
    """Share of judged assertions answered ``undetermined`` (None: none judged)."""
    error_rate: float | None
    """Share of judged assertions answered ``error``."""
    crashed: int
    """Cases where the design raised or ran out of time."""
    actions: int
    """Actions executed, over every repeat."""
    seconds_per_action: float | None
    """Mean wall time of an executed action (settling and judging), over every repeat."""
    cost_per_action: float | None
    """Judge-model cost in USD per executed action (0 offline; None when a request had no price)."""
    usage: Usage
    """Judge-model requests, tokens and cost over every repeat."""
    repeats: int
    """How often each case was judged."""
    changed_rate: float | None
    """Share of actions whose verdict changed between repeats (None with one judging)."""


class Disagreement(BaseModel):
    """An action two designs judged differently."""

    task_id: int
    """Task."""
    case: str
    """Case name."""
    index: int
    """0-based action index."""
    description: str
    """The action."""
    a: ActionOutcome
    """Design A's outcome."""
    b: ActionOutcome
    """Design B's outcome."""


class Agreement(BaseModel):
    """Per-action agreement of two designs."""

    a: str
    """Design A."""
    b: str
    """Design B."""
    actions: int
    """Actions both executed."""
    agreed: int
    """Of those, judged the same (both passed or both failed)."""
    agreement: float | None
    """``agreed / actions``."""
    kappa: float | None
    """Cohen's kappa over pass/fail (None when undefined)."""
    disagreements: list[Disagreement] = Field(default_factory=list[Disagreement])
    """Every action they judged differently."""


class LabReport(BaseModel):
    """Everything ``iwr judges eval`` measured (``--json``)."""

    designs: list[DesignSpec]
    """The designs, as given."""
    scores: list[DesignScore]
    """Per design."""
    agreements: list[Agreement]
    """Per pair of designs."""
    results: list[CaseResult]
    """Every case judged, per design and repeat."""
    wall_s: dict[str, float]
    """Wall time per design, all repeats."""


def _rate(part: int, whole: int) -> float | None:
    return None if whole == 0 else part / whole


def _executed(results: Sequence[CaseResult]) -> list[ActionOutcome]:
    return [a for r in results for a in r.actions if a.status != "not_run"]


def changed_rate(results: Sequence[CaseResult]) -> float | None:
    """Share of actions (executed in at least one judging) whose verdict was not the same in every one.

    None with a single judging.
    """
    if len({r.repeat for r in results}) < 2:
        return None
    labels: dict[tuple[int, str, int], set[str]] = {}
    ran: set[tuple[int, str, int]] = set()
    for r in results:
        for a in r.actions:
            key = (r.task_id, r.case, a.index)
            labels.setdefault(key, set()).add(a.label())
            if a.status != "not_run":
                ran.add(key)
    changed = sum(1 for key in ran if len(labels[key]) > 1)
    return changed / len(ran) if ran else 0.0


def score(design: str, results: Sequence[CaseResult], usage: Usage) -> DesignScore:
    """One design's numbers from its results (every repeat)."""
    first = [r for r in results if r.repeat == 1]
    refs = [r for r in first if r.kind == "reference"]
    mutants = [r for r in first if r.kind != "reference" and r.expected_first_failure is not None]
    harmless = [r for r in first if r.kind != "reference" and r.expected_first_failure is None]
    verdicts = [a.verdict for a in _executed(first) if a.verdict is not None]
    executed = _executed(results)
    cost = None if usage.unpriced else usage.cost_usd / len(executed) if executed else None
    return DesignScore(
        design=design,
        references=len(refs),
        references_ok=sum(r.correct for r in refs),
        mutants=len(mutants),
        mutants_at_step=sum(r.first_failure == r.expected_first_failure and not r.error for r in mutants),
        mutants_ok=sum(r.correct for r in mutants),
        harmless=len(harmless),
        harmless_ok=sum(r.correct for r in harmless),
        cases=len(first),
        correct=sum(r.correct for r in first),
        accuracy=_rate(sum(r.correct for r in first), len(first)) or 0.0,
        mean_abs_step_error=sum(abs(r.steps - r.expected_steps) for r in first) / len(first)
        if first
        else 0.0,
        undetermined_rate=_rate(verdicts.count("undetermined"), len(verdicts)),
        error_rate=_rate(verdicts.count("error"), len(verdicts)),
        crashed=sum(bool(r.error) for r in first),
        actions=len(executed),
        seconds_per_action=sum(a.seconds for a in executed) / len(executed) if executed else None,
        cost_per_action=cost,
        usage=usage,
        repeats=len({r.repeat for r in results}),
        changed_rate=changed_rate(results),
    )


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' labels (None when there are none or chance agreement is 1)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(x == y for x, y in pairs) / n
    a, b = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    expected = sum(a[k] * b[k] for k in a.keys() | b.keys()) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def _pass_fail(a: ActionOutcome) -> str:
    return "pass" if a.status == "ok" else "fail"


def agreement(a_name: str, a: Sequence[CaseResult], b_name: str, b: Sequence[CaseResult]) -> Agreement:
    """Per-action agreement of two designs on the cases both judged (first judging)."""
    b_cases = {(r.task_id, r.case): r for r in b if r.repeat == 1}
    pairs: list[tuple[str, str]] = []
    differ: list[Disagreement] = []
    for ra in (r for r in a if r.repeat == 1):
        rb = b_cases.get((ra.task_id, ra.case))
        if rb is None:
            continue
        for xa, xb in zip(ra.actions, rb.actions, strict=False):
            if xa.status == "not_run" or xb.status == "not_run":
                continue
            pairs.append((_pass_fail(xa), _pass_fail(xb)))
            if pairs[-1][0] != pairs[-1][1]:
                differ.append(
                    Disagreement(
                        task_id=ra.task_id,
                        case=ra.case,
                        index=xa.index,
                        description=xa.description,
                        a=xa,
                        b=xb,
                    )
                )
    agreed = sum(x == y for x, y in pairs)
    return Agreement(
        a=a_name,
        b=b_name,
        actions=len(pairs),
        agreed=agreed,
        agreement=_rate(agreed, len(pairs)),
        kappa=cohen_kappa(pairs),
        disagreements=differ,
    )


def lab_report(
    designs: Sequence[DesignSpec],
    results: Sequence[CaseResult],
    usage: dict[str, Usage],
    wall_s: dict[str, float],
) -> LabReport:
    """Scores per design and agreement of every pair, from every case result."""
    by_design = {d.label: [r for r in results if r.design == d.label] for d in designs}
    scores = [score(d.label, by_design[d.label], usage.get(d.label, Usage())) for d in designs]
    pairs = [
        agreement(x.label, by_design[x.label], y.label, by_design[y.label])
        for x, y in combinations(designs, 2)
    ]
    return LabReport(
        designs=list(designs), scores=scores, agreements=pairs, results=list(results), wall_s=wall_s
    )


# -- rows for the terminal ---------------------------------------------------------------------------


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100 * value, 1)


def score_rows(report: LabReport) -> list[Row]:
    """One row per design."""
    return [
        {
            "design": s.design,
            "references at IFS 100": f"{s.references_ok}/{s.references}",
            "mutants at step": f"{s.mutants_at_step}/{s.mutants}",
            "mutants at step and reason": f"{s.mutants_ok}/{s.mutants}",
            "harmless mutants at IFS 100": f"{s.harmless_ok}/{s.harmless}",
            "accuracy %": _pct(s.accuracy),
            "step error": round(s.mean_abs_step_error, 2),
            "undetermined %": _pct(s.undetermined_rate),
            "errors %": _pct(s.error_rate),
            "crashed": s.crashed,
            "s per action": None if s.seconds_per_action is None else round(s.seconds_per_action, 2),
            "usd per action": "unpriced" if s.cost_per_action is None else f"{s.cost_per_action:.6f}",
            "changed on repeat %": _pct(s.changed_rate),
        }
        for s in report.scores
    ]


def agreement_rows(report: LabReport) -> list[Row]:
    """One row per pair of designs."""
    return [
        {
            "A": p.a,
            "B": p.b,
            "actions": p.actions,
            "agreement %": _pct(p.agreement),
            "kappa": None if p.kappa is None else round(p.kappa, 3),
            "disagreements": len(p.disagreements),
        }
        for p in report.agreements
    ]


def wrong_rows(report: LabReport) -> list[Row]:
    """The cases a design got wrong (first judging): expected against found."""
    rows: list[Row] = []
    for r in report.results:
        if r.repeat != 1 or r.correct:
            continue
        rows.append(
            {
                "design": r.design,
                "task": r.task_id,
                "case": r.case,
                "expected": _where(r.expected_first_failure, r.expected_reason),
                "found": r.error or _where(r.first_failure, r.reason),
            }
        )
    return rows


def _where(index: int | None, reason: str | None) -> str:
    return "IFS 100" if index is None else f"step {index} {reason or ''}".strip()
