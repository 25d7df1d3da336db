"""Human labels of single actions, and how far each judge design agrees with them.

The labels file (``iwr judges eval --labels FILE``, ``docs/judge-eval-report.md``) is JSON Lines:
one object per labelled action, ``{"task_id": 102, "case": "reference", "index": 2, "label":
"pass", "note": "..."}``; ``index`` is the 0-based action, ``label`` is ``pass`` or ``fail``, and
``note`` is optional. Blank lines are skipped and other keys ignored.

A label is *matched* for a design when the design executed that action in its first judging
(status ok or failed; an action after the design's first failure was never judged). The design's
answer is ``pass`` for ok and ``fail`` for failed, whatever the failure class: an assertion
answered ``undetermined`` counts as the design's policy made it count.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from iwr_bench.agents.judge.lab import CaseResult
from iwr_bench.errors import UserError
from iwr_bench.report.lab_stats import (
    Bootstrap,
    Interval,
    agreement_2x2,
    as_sums,
    bootstrap_ci,
    kappa_2x2,
)


class HumanLabel(BaseModel):
    """One action as a person judged it."""

    task_id: int = Field(strict=True, ge=0)
    """Task."""
    case: str = Field(min_length=1)
    """``reference`` or the mutant's name (its folder)."""
    index: int = Field(strict=True, ge=0)
    """0-based action index."""
    label: Literal["pass", "fail"]
    """Whether the action, as performed on that page, should pass."""
    note: str = ""
    """Free text (why)."""


class LabelFile(BaseModel):
    """Labels, and the file they came from."""

    file: str = ""
    """Its path, as given (empty: labels given in code)."""
    labels: list[HumanLabel]
    """The labels, in file order."""


class LabelSource(BaseModel):
    """The labels file a report was measured against."""

    file: str
    """Its path, as given."""
    labels: int
    """Labels it holds."""
    without_case: int
    """Labels naming a task, case or action index that no design judged (a typo, or a case left out)."""


class HumanAgreement(BaseModel):
    """One design's agreement with the human labels (first judging)."""

    design: str
    """Design label."""
    labelled: int
    """Labels on actions of cases this design judged."""
    matched: int
    """Of those, actions the design executed (the rest it never reached)."""
    both_pass: int
    """Matched actions both the person and the design passed."""
    human_pass_design_fail: int
    """Matched actions the person passed and the design failed."""
    human_fail_design_pass: int
    """Matched actions the person failed and the design passed."""
    both_fail: int
    """Matched actions both failed."""
    agreement: float | None
    """Share of matched actions where the design answered as the person did (None: none matched)."""
    agreement_ci: Interval | None
    """Bootstrap interval of ``agreement``, resampling cases."""
    kappa: float | None
    """Cohen's kappa of design against person over pass/fail (None: undefined)."""
    kappa_ci: Interval | None
    """Bootstrap interval of ``kappa``, resampling cases."""


def _error(path: Path, line: int, what: str) -> UserError:
    return UserError(f"{path}:{line}: {what} (one JSON object a line: task_id, case, index, label pass|fail)")


def _label(path: Path, n: int, text: str) -> HumanLabel:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _error(path, n, f"not JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise _error(path, n, "not a JSON object")
    try:
        return HumanLabel.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "label"
        raise _error(path, n, f"{where}: {err['msg']}") from exc


def read_labels(path: Path) -> LabelFile:
    """The labels of a JSON Lines file (module doc).

    Raises:
        UserError: one line naming the file and line: unreadable, not JSON, a missing or bad key, an
            action labelled twice, or no label at all.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the labels file ({exc})") from exc
    labels: list[HumanLabel] = []
    seen: dict[tuple[int, str, int], int] = {}
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        label = _label(path, n, text)
        key = (label.task_id, label.case, label.index)
        if key in seen:
            raise _error(
                path, n, f"task {key[0]} case {key[1]!r} action {key[2]} already labelled on line {seen[key]}"
            )
        seen[key] = n
        labels.append(label)
    if not labels:
        raise UserError(f"{path}: no label in the file")
    return LabelFile(file=str(path), labels=labels)


def label_source(given: LabelFile, results: Sequence[CaseResult]) -> LabelSource:
    """How many labels name an action some design judged in its first judging."""
    known = {(r.task_id, r.case, a.index) for r in results if r.repeat == 1 for a in r.actions}
    missing = sum((x.task_id, x.case, x.index) not in known for x in given.labels)
    return LabelSource(file=given.file, labels=len(given.labels), without_case=missing)


_CELL = {("pass", "pass"): 0, ("pass", "fail"): 1, ("fail", "pass"): 2, ("fail", "fail"): 3}


def human_agreement(
    design: str, results: Sequence[CaseResult], labels: Sequence[HumanLabel], boot: Bootstrap
) -> HumanAgreement:
    """Agreement of one design's first judging with the labels (module doc)."""
    by_case: dict[tuple[int, str], list[HumanLabel]] = {}
    for x in labels:
        by_case.setdefault((x.task_id, x.case), []).append(x)
    units: list[list[float]] = []
    labelled = 0
    for r in (r for r in results if r.repeat == 1):
        mine = by_case.get((r.task_id, r.case), [])
        labelled += len(mine)
        table = [0.0] * 4
        outcomes = {a.index: a for a in r.actions if a.status != "not_run"}
        for x in mine:
            if (a := outcomes.get(x.index)) is not None:
                table[_CELL[x.label, "pass" if a.status == "ok" else "fail"]] += 1
        if mine:
            units.append(table)
    total = [sum(u[i] for u in units) for i in range(4)]
    sums = as_sums(total)
    return HumanAgreement(
        design=design,
        labelled=labelled,
        matched=int(sum(total)),
        both_pass=int(total[0]),
        human_pass_design_fail=int(total[1]),
        human_fail_design_pass=int(total[2]),
        both_fail=int(total[3]),
        agreement=agreement_2x2(sums),
        agreement_ci=bootstrap_ci(units, agreement_2x2, boot),
        kappa=kappa_2x2(sums),
        kappa_ci=bootstrap_ci(units, kappa_2x2, boot),
    )
