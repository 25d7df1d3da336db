"""How good is a judge design: the numbers ``iwr judges eval`` reports (``docs/judge-eval-report.md``).

Input: :class:`~iwr_bench.agents.judge.lab.CaseResult` records (each case judged by each design,
once per repeat) and, from the task records, each action's type, description and assertion
(:class:`ActionInfo`). Every number is over the first judging unless it says otherwise.

Per design (:class:`DesignScore`): references judged at IFS 100, mutants failing at their expected
step (and with the expected reason), *accuracy* (cases entirely right: step and reason, with an
``undetermined`` assertion counted as the design's policy says), mean absolute step error, and the
undetermined and error rates of the judged assertions. Cost and wall time per executed action are
over every repeat; with repeats, the share of actions whose verdict changed between them.

*Deciding actions* of a case: the executed actions up to and including the expected first failure
(every executed action of a page that must pass). Whether a case is right depends on these alone.

- *Per-action accuracy*: over deciding actions, an action is right when it passed before the
  expected first failure, or failed at it with the expected reason. Actions after the expected
  first failure, and actions never run, are not counted.
- *Undetermined apart*: a case *leans on undetermined* when one of its deciding actions got an
  ``undetermined`` verdict (under either policy, that answer set the outcome). *Strict accuracy*
  counts those cases wrong; *decided accuracy* is the accuracy over the other cases.
- Breakdowns (:class:`Breakdown`) of accuracy by case kind, and of per-action accuracy by action
  type.

Intervals are percentile bootstrap intervals resampling cases (:mod:`iwr_bench.report.lab_stats`).

Between two designs, on the first judging: per action (:class:`Agreement`), each action both
executed is a pass or a fail for each; agreement is the share that match and Cohen's kappa corrects
it for chance (None when both gave one answer throughout); every action where they differ is
listed. Per case (:class:`McNemar`), McNemar's exact test on the cases both judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from pydantic import BaseModel, Field

from iwr_bench.agents.judge.lab import ActionOutcome, CaseResult, DesignSpec, Usage
from iwr_bench.dataset.layout import Task
from iwr_bench.report.lab_labels import HumanAgreement, LabelFile, LabelSource, human_agreement, label_source
from iwr_bench.report.lab_stats import Bootstrap, Interval, bootstrap_ci, cohen_kappa, mcnemar_p, ratio


class ActionInfo(BaseModel):
    """What the task record says about one action (the case results do not carry it)."""

    type: str
    """``Click``, ``Type``, ``Scroll`` or ``Press`` (as the record gives it)."""
    description: str
    """The action's description."""
    assertion: str = ""
    """Its logical assertion (empty: none)."""


def task_actions(tasks: Iterable[Task]) -> dict[int, list[ActionInfo]]:
    """Each task's actions, by task id."""
    return {
        t.id: [
            ActionInfo(type=a.type, description=a.parameters.description, assertion=a.logical_assertion)
            for a in t.record.action_sequence
        ]
        for t in tasks
    }


class Breakdown(BaseModel):
    """Accuracy over one group: cases of one kind, or actions of one type."""

    group: str
    """The case kind (``reference``, ``label_changed``, ...) or the action type (``Click``, ...)."""
    count: int
    """Cases of that kind, or deciding actions of that type."""
    correct: int
    """Of those, judged right."""
    accuracy: float | None
    """``correct / count`` (None: none)."""
    accuracy_ci: Interval | None
    """Bootstrap interval of ``accuracy``, resampling cases."""


class DesignScore(BaseModel):
    """One design's numbers (first judging unless said otherwise)."""

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
    """Cases entirely right (``undetermined`` counted as ``undetermined_policy`` says)."""
    accuracy: float
    """``correct / cases`` (0 with no case)."""
    accuracy_ci: Interval | None = None
    """Bootstrap interval of ``accuracy``."""
    undetermined_policy: str = "pass"
    """What an ``undetermined`` assertion counted as while judging (``pass`` or ``fail``)."""
    undetermined_cases: int = 0
    """Cases leaning on undetermined: a deciding action got an ``undetermined`` verdict."""
    strict_correct: int = 0
    """Cases right without leaning on undetermined."""
    strict_accuracy: float = 0.0
    """``strict_correct / cases``: accuracy with every case leaning on undetermined counted wrong."""
    strict_accuracy_ci: Interval | None = None
    """Bootstrap interval of ``strict_accuracy``."""
    decided_accuracy: float | None = None
    """``strict_correct / (cases - undetermined_cases)``: accuracy on the cases that do not lean on
    undetermined (None: every case does)."""
    decided_accuracy_ci: Interval | None = None
    """Bootstrap interval of ``decided_accuracy`` (all cases resampled, the ratio recomputed)."""
    deciding_actions: int = 0
    """Deciding actions (executed, up to and including the expected first failure)."""
    deciding_actions_right: int = 0
    """Of those, judged right (passed before the expected first failure, or failed at it as expected)."""
    action_accuracy: float | None = None
    """``deciding_actions_right / deciding_actions`` (None: no deciding action)."""
    action_accuracy_ci: Interval | None = None
    """Bootstrap interval of ``action_accuracy``, resampling cases (their actions go together)."""
    by_kind: list[Breakdown] = Field(default_factory=list[Breakdown])
    """Accuracy per case kind (``reference`` first)."""
    by_action_type: list[Breakdown] = Field(default_factory=list[Breakdown])
    """Per-action accuracy per action type (empty when the action types are not known)."""
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


class McNemar(BaseModel):
    """McNemar's exact test of two designs' case accuracy, on the cases both judged (first judging)."""

    a: str
    """Design A."""
    b: str
    """Design B."""
    cases: int
    """Cases both judged."""
    a_correct: int
    """Of those, right under A."""
    b_correct: int
    """Of those, right under B."""
    a_only: int
    """McNemar's *b*: cases A got right and B wrong."""
    b_only: int
    """McNemar's *c*: cases B got right and A wrong."""
    p_value: float
    """Exact two-sided p-value (binomial test of ``a_only`` in ``a_only + b_only`` at 1/2; 1 when
    both are 0)."""


class WrongCase(BaseModel):
    """A case a design got wrong (first judging), with the action where it went wrong."""

    design: str
    """Design label."""
    task_id: int
    """Task."""
    case: str
    """Case name."""
    kind: str
    """Case kind."""
    expected: str
    """``IFS 100`` or ``step N REASON`` (0-based N)."""
    found: str
    """The same for what the design found, or the design's error."""
    index: int | None
    """The action where it departed: the earlier of the expected and the found first failure
    (None: the design crashed)."""
    action_type: str = ""
    """That action's type (empty: not known)."""
    description: str = ""
    """That action's description."""
    assertion: str = ""
    """That action's logical assertion (empty: none)."""
    outcome: str = ""
    """The design's outcome there, as ``status:failure:verdict`` (empty: not recorded)."""
    reasoning: str = ""
    """The design's reasoning there."""


class LabReport(BaseModel):
    """Everything ``iwr judges eval`` measured (``--json``; ``docs/judge-eval-report.md``)."""

    designs: list[DesignSpec]
    """The designs, as given."""
    scores: list[DesignScore]
    """Per design."""
    agreements: list[Agreement]
    """Per pair of designs: per-action agreement."""
    mcnemar: list[McNemar] = Field(default_factory=list[McNemar])
    """Per pair of designs: McNemar's test on case accuracy."""
    human: list[HumanAgreement] = Field(default_factory=list[HumanAgreement])
    """Per design: agreement with the human labels (empty without ``--labels``)."""
    labels: LabelSource | None = None
    """The labels file (None without one)."""
    wrong: list[WrongCase] = Field(default_factory=list[WrongCase])
    """Every case a design got wrong (first judging)."""
    statistics: Bootstrap = Bootstrap()
    """How the intervals were drawn."""
    actions: dict[int, list[ActionInfo]] = Field(default_factory=dict[int, list[ActionInfo]])
    """The judged tasks' actions, by task id (what the breakdowns by action type read)."""
    results: list[CaseResult]
    """Every case judged, per design and repeat."""
    wall_s: dict[str, float]
    """Time per design, all repeats, in seconds (its judging jobs' times added up)."""


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


# -- cases and actions --------------------------------------------------------------------------


def deciding(r: CaseResult) -> list[ActionOutcome]:
    """The executed actions up to and including the expected first failure (all, on a page that passes)."""
    last = r.expected_first_failure
    return [a for a in r.actions if a.status != "not_run" and (last is None or a.index <= last)]


def action_right(r: CaseResult, a: ActionOutcome) -> bool:
    """A deciding action judged right: passed before the expected first failure, or failed there as
    expected."""
    if a.index == r.expected_first_failure:
        return a.status == "failed" and a.failure == r.expected_reason
    return a.status == "ok"


def leans_on_undetermined(r: CaseResult) -> bool:
    """A deciding action got an ``undetermined`` verdict (the outcome rests on the policy)."""
    return any(a.verdict == "undetermined" for a in deciding(r))


def _ci(units: list[list[float]], boot: Bootstrap) -> Interval | None:
    return bootstrap_ci(units, ratio, boot)


def _case_fields(first: Sequence[CaseResult], boot: Bootstrap) -> dict[str, Any]:
    """Case accuracy as the policy made it, with undetermined counted apart, and per case kind."""
    right = [float(r.correct) for r in first]
    lean = [float(leans_on_undetermined(r)) for r in first]
    strict = [c * (1 - u) for c, u in zip(right, lean, strict=True)]
    decided = len(first) - int(sum(lean))
    kinds = sorted({r.kind for r in first}, key=lambda k: (k != "reference", k))
    return {
        "cases": len(first),
        "correct": int(sum(right)),
        "accuracy": _rate(int(sum(right)), len(first)) or 0.0,
        "accuracy_ci": _ci([[c, 1.0] for c in right], boot),
        "undetermined_cases": int(sum(lean)),
        "strict_correct": int(sum(strict)),
        "strict_accuracy": _rate(int(sum(strict)), len(first)) or 0.0,
        "strict_accuracy_ci": _ci([[c, 1.0] for c in strict], boot),
        "decided_accuracy": _rate(int(sum(strict)), decided),
        "decided_accuracy_ci": _ci([[c, 1.0 - u] for c, u in zip(strict, lean, strict=True)], boot),
        "by_kind": [
            _breakdown(k, [[float(r.correct), 1.0] for r in first if r.kind == k], boot) for k in kinds
        ],
    }


def _type_of(actions: Mapping[int, Sequence[ActionInfo]], r: CaseResult, a: ActionOutcome) -> str | None:
    infos = actions.get(r.task_id, ())
    return infos[a.index].type if a.index < len(infos) else None


def _action_units(
    first: Sequence[CaseResult], actions: Mapping[int, Sequence[ActionInfo]], action_type: str | None
) -> list[list[float]]:
    """Per case: (deciding actions right, deciding actions), of one action type (None: of any)."""
    units: list[list[float]] = []
    for r in first:
        mine = [a for a in deciding(r) if action_type is None or _type_of(actions, r, a) == action_type]
        units.append([float(sum(action_right(r, a) for a in mine)), float(len(mine))])
    return units


def _breakdown(group: str, units: list[list[float]], boot: Bootstrap) -> Breakdown:
    correct, count = (int(sum(u[i] for u in units)) for i in (0, 1))
    return Breakdown(
        group=group,
        count=count,
        correct=correct,
        accuracy=_rate(correct, count),
        accuracy_ci=_ci(units, boot),
    )


def _action_fields(
    first: Sequence[CaseResult], actions: Mapping[int, Sequence[ActionInfo]], boot: Bootstrap
) -> dict[str, Any]:
    """Per-action accuracy, overall and per action type."""
    every = _breakdown("all", _action_units(first, actions, None), boot)
    types = {t for r in first for a in deciding(r) if (t := _type_of(actions, r, a)) is not None}
    return {
        "deciding_actions": every.count,
        "deciding_actions_right": every.correct,
        "action_accuracy": every.accuracy,
        "action_accuracy_ci": every.accuracy_ci,
        "by_action_type": [_breakdown(t, _action_units(first, actions, t), boot) for t in sorted(types)],
    }


def score(
    design: str,
    results: Sequence[CaseResult],
    usage: Usage,
    *,
    actions: Mapping[int, Sequence[ActionInfo]] | None = None,
    boot: Bootstrap | None = None,
    undetermined_policy: str = "pass",
) -> DesignScore:
    """One design's numbers from its results (every repeat); ``actions`` gives the action types."""
    boot = boot or Bootstrap()
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
        undetermined_policy=undetermined_policy,
        **_case_fields(first, boot),
        **_action_fields(first, actions or {}, boot),
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


# -- between designs ----------------------------------------------------------------------------


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


def mcnemar(a_name: str, a: Sequence[CaseResult], b_name: str, b: Sequence[CaseResult]) -> McNemar:
    """McNemar's exact test of two designs on the cases both judged (first judging)."""
    b_cases = {(r.task_id, r.case): r.correct for r in b if r.repeat == 1}
    pairs = [
        (r.correct, b_cases[r.task_id, r.case]) for r in a if r.repeat == 1 and (r.task_id, r.case) in b_cases
    ]
    a_only = sum(x and not y for x, y in pairs)
    b_only = sum(y and not x for x, y in pairs)
    return McNemar(
        a=a_name,
        b=b_name,
        cases=len(pairs),
        a_correct=sum(x for x, _ in pairs),
        b_correct=sum(y for _, y in pairs),
        a_only=a_only,
        b_only=b_only,
        p_value=mcnemar_p(a_only, b_only),
    )


# -- wrong cases --------------------------------------------------------------------------------


def where(index: int | None, reason: str | None) -> str:
    """``IFS 100`` for no failure, else ``step N REASON``."""
    return "IFS 100" if index is None else f"step {index} {reason or ''}".strip()


def departure(r: CaseResult) -> int | None:
    """The action where a wrong case went wrong: the earlier of the expected and found first failure."""
    if r.error:
        return None
    found = [i for i in (r.first_failure, r.expected_first_failure) if i is not None]
    return min(found) if found else None


def wrong_case(r: CaseResult, actions: Mapping[int, Sequence[ActionInfo]]) -> WrongCase:
    """A wrong case with the action where it departed, from the result and the task record."""
    index = departure(r)
    infos = actions.get(r.task_id, [])
    info = infos[index] if index is not None and index < len(infos) else None
    outcome = next((a for a in r.actions if a.index == index), None)
    return WrongCase(
        design=r.design,
        task_id=r.task_id,
        case=r.case,
        kind=r.kind,
        expected=where(r.expected_first_failure, r.expected_reason),
        found=r.error or where(r.first_failure, r.reason),
        index=index,
        action_type=info.type if info else "",
        description=info.description if info else outcome.description if outcome else "",
        assertion=info.assertion if info else "",
        outcome=outcome.label() if outcome else "",
        reasoning=outcome.reasoning if outcome else "",
    )


def lab_report(
    designs: Sequence[DesignSpec],
    results: Sequence[CaseResult],
    usage: dict[str, Usage],
    wall_s: dict[str, float],
    *,
    actions: Mapping[int, Sequence[ActionInfo]] | None = None,
    labels: LabelFile | None = None,
    boot: Bootstrap | None = None,
) -> LabReport:
    """Everything measured: scores per design, pairs of designs, wrong cases and human agreement.

    Args:
        designs: the designs (their labels name the results' ``design``).
        results: every case judged.
        usage: judge-model usage per design label.
        wall_s: wall time per design label.
        actions: each task's actions (types, descriptions, assertions), by task id.
        labels: human labels of single actions (None: no agreement with people is measured).
        boot: how intervals are drawn (default: 2000 resamples, seed 0, 95 %).
    """
    boot = boot or Bootstrap()
    actions = actions or {}
    by_design = {d.label: [r for r in results if r.design == d.label] for d in designs}
    scores = [
        score(
            d.label,
            by_design[d.label],
            usage.get(d.label, Usage()),
            actions=actions,
            boot=boot,
            undetermined_policy=d.undetermined_policy,
        )
        for d in designs
    ]
    pairs = list(combinations(designs, 2))
    return LabReport(
        designs=list(designs),
        scores=scores,
        agreements=[agreement(x.label, by_design[x.label], y.label, by_design[y.label]) for x, y in pairs],
        mcnemar=[mcnemar(x.label, by_design[x.label], y.label, by_design[y.label]) for x, y in pairs],
        human=[]
        if labels is None
        else [human_agreement(d.label, by_design[d.label], labels.labels, boot) for d in designs],
        labels=None if labels is None else label_source(labels, results),
        wrong=[wrong_case(r, actions) for r in results if r.repeat == 1 and not r.correct],
        statistics=boot,
        actions={k: list(v) for k, v in actions.items()},
        results=list(results),
        wall_s=wall_s,
    )
