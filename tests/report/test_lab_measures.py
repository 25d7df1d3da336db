"""The judge-eval measurement on hand-built results: per-action accuracy, breakdowns, undetermined
answers apart, McNemar, wrong cases with their action, human labels, tables and the HTML page."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from iwr_bench.agents.judge.lab import ActionOutcome, CaseResult, DesignSpec
from iwr_bench.agents.judge.records import FailureClass
from iwr_bench.errors import UserError
from iwr_bench.report.judge_eval import ActionInfo, LabReport, lab_report
from iwr_bench.report.judge_eval_html import write_lab_html
from iwr_bench.report.lab_labels import LabelFile, read_labels
from iwr_bench.report.lab_rows import (
    action_type_rows,
    human_rows,
    kind_rows,
    mcnemar_rows,
    score_rows,
    undetermined_rows,
    wrong_rows,
)
from iwr_bench.report.render import print_rows

TYPES = ["Click", "Type", "Click", "Scroll", "Press"]
ACTIONS = {
    1: [
        ActionInfo(
            type=t, description=f"do {t.lower()} {i}", assertion=f"state {i} is shown" if i == 2 else ""
        )
        for i, t in enumerate(TYPES)
    ]
}
_SAID = {"y": "yes", "n": "no", "u": "undetermined", "e": "error"}


def _case(
    design: str,
    name: str,
    statuses: str,
    *,
    kind: str = "reference",
    expect: int | None = None,
    reason: FailureClass = "assertion_failed",
    failure: FailureClass = "assertion_failed",
    verdicts: str = "",
) -> CaseResult:
    """A case of task 1 from statuses (o ok, f failed, - not run) and verdicts (y/n/u/e, space: none)."""
    words = {"o": "ok", "f": "failed", "-": "not_run"}
    actions = [
        ActionOutcome(
            index=i,
            description=f"do {TYPES[i].lower()} {i}",
            status=words[c],  # type: ignore[arg-type]
            failure=failure if c == "f" else None,
            verdict=_SAID.get(verdicts[i : i + 1]),  # type: ignore[arg-type]
            reasoning=f"{design} reasons about {i}",
        )
        for i, c in enumerate(statuses)
    ]
    first = statuses.find("f")
    return CaseResult(
        design=design, repeat=1, task_id=1, case=name, kind=kind, expected_first_failure=expect,
        expected_reason=None if expect is None else reason, total_steps=len(statuses),
        first_failure=None if first < 0 else first, reason=None if first < 0 else failure, actions=actions,
    )  # fmt: skip


def _report(results: list[CaseResult], **kwargs: object) -> LabReport:
    designs = [DesignSpec(label=d) for d in dict.fromkeys(r.design for r in results)]
    return lab_report(designs, results, {}, {}, actions=ACTIONS, **kwargs)  # type: ignore[arg-type]


def _five(design: str = "A") -> list[CaseResult]:
    return [
        _case(design, "ref", "ooooo"),
        _case(design, "m1", "oof--", kind="label_changed", expect=2),  # right
        _case(design, "m2", "ooof-", kind="label_changed", expect=2),  # passes the broken action
        _case(design, "m3", "of---", kind="handler_removed", expect=3),  # fails too early
        # fails where expected, for another reason
        _case(design, "m4", "of---", kind="handler_removed", expect=1, reason="element_not_found"),
    ]


def test_per_action_accuracy_counts_deciding_actions_only() -> None:
    (s,) = _report(_five()).scores
    # Deciding actions: ref 5/5, m1 3/3, m2 2/3 (action 3 comes after the expected failure), m3 1/2
    # (actions 2 and 3 never ran), m4 1/2 (failed where expected, for another reason).
    assert (s.deciding_actions, s.deciding_actions_right) == (15, 12)
    assert s.action_accuracy == pytest.approx(12 / 15)
    assert (
        s.action_accuracy_ci is not None and s.action_accuracy_ci.low <= 12 / 15 <= s.action_accuracy_ci.high
    )
    by_type = {b.group: (b.count, b.correct) for b in s.by_action_type}
    assert by_type == {"Click": (8, 7), "Type": (5, 3), "Scroll": (1, 1), "Press": (1, 1)}
    assert [(b.group, b.count, b.correct) for b in s.by_kind] == [
        ("reference", 1, 1), ("handler_removed", 2, 0), ("label_changed", 2, 1),
    ]  # fmt: skip
    assert (s.correct, s.cases) == (2, 5) and s.accuracy_ci is not None
    assert s.accuracy_ci.low <= 0.4 <= s.accuracy_ci.high


def test_without_the_tasks_there_is_no_breakdown_by_action_type() -> None:
    designs = [DesignSpec(label="A")]
    (s,) = lab_report(designs, _five(), {}, {}).scores
    assert s.by_action_type == [] and s.deciding_actions == 15


def test_undetermined_answers_are_counted_apart() -> None:
    results = [
        _case("H", "ref", "ooooo", verdicts="uyuy"),  # right, leaning on undetermined
        _case("H", "m1", "of---", kind="label_changed", expect=1, verdicts=" n"),  # right, decided
        _case("H", "m2", "of---", kind="label_changed", expect=1, verdicts="un"),  # right, leaning
        _case("H", "ref2", "ooooo"),  # right, no assertion at all
        _case("H", "m3", "oooo-", kind="label_changed", expect=1, verdicts="yyuu"),  # wrong; its
        # undetermined answers come after the expected failure: they decided nothing
    ]
    report = lab_report([DesignSpec(label="H", undetermined_policy="pass")], results, {}, {})
    (s,) = report.scores
    assert (s.correct, s.accuracy) == (4, 0.8)
    assert s.undetermined_rate == pytest.approx(5 / 11)  # of every judged assertion
    assert s.undetermined_cases == 2
    assert (s.strict_correct, s.strict_accuracy) == (2, 0.4)
    assert s.decided_accuracy == pytest.approx(2 / 3)
    for ci, value in ((s.strict_accuracy_ci, 0.4), (s.decided_accuracy_ci, 2 / 3)):
        assert ci is not None and ci.low <= value <= ci.high
    (row,) = undetermined_rows(report)
    assert row["undetermined counts as"] == "pass" and row["cases leaning on undetermined"] == "2/5"
    assert row["accuracy, undetermined wrong %"] == 40.0 and row["decided accuracy %"] == 66.7
    assert row["decided cases"] == 3


def test_mcnemar_between_two_designs() -> None:
    results: list[CaseResult] = []
    for k in range(14):  # A alone right on 10, B alone right on 2, both right on 2
        a_right, b_right = k < 10 or k >= 12, k >= 10
        results.append(_case("A", f"c{k}", "ooooo" if a_right else "oof--"))
        results.append(_case("B", f"c{k}", "ooooo" if b_right else "f----"))
    report = _report(results)
    (m,) = report.mcnemar
    assert (m.a, m.b, m.cases, m.a_correct, m.b_correct, m.a_only, m.b_only) == ("A", "B", 14, 12, 4, 10, 2)
    assert round(m.p_value, 4) == 0.0386
    (row,) = mcnemar_rows(report)
    assert (
        row["b: A right, B wrong"] == 10 and row["c: A wrong, B right"] == 2 and row["p (exact)"] == "0.0386"
    )


def test_wrong_cases_show_the_action_and_its_assertion() -> None:
    crashed = _case("A", "m5", "-----", kind="label_changed", expect=2).model_copy(
        update={"error": "TimeoutError: too slow"}
    )
    report = _report([*_five(), crashed])
    wrong = {w.case: w for w in report.wrong}
    assert sorted(wrong) == ["m2", "m3", "m4", "m5"]
    m2 = wrong["m2"]  # it passed action 2, whose assertion should have failed
    assert (m2.index, m2.action_type, m2.description) == (2, "Click", "do click 2")
    assert (m2.assertion, m2.outcome, m2.reasoning) == ("state 2 is shown", "ok", "A reasons about 2")
    assert (m2.expected, m2.found) == ("step 2 assertion_failed", "step 3 assertion_failed")
    assert (wrong["m3"].index, wrong["m3"].action_type, wrong["m3"].assertion) == (1, "Type", "")
    assert wrong["m3"].outcome == "failed:assertion_failed"
    assert wrong["m5"].index is None and wrong["m5"].found == "TimeoutError: too slow"
    rows = {r["case"]: r for r in wrong_rows(report)}
    assert rows["m2"]["action"] == "#2 Click" and rows["m2"]["assertion"] == "state 2 is shown"


# -- human labels -------------------------------------------------------------------------------


def _labels(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_agreement_with_human_labels(tmp_path: Path) -> None:
    path = _labels(
        tmp_path,
        '{"task_id": 1, "case": "ref", "index": 0, "label": "pass"}\n'
        '{"task_id": 1, "case": "ref", "index": 1, "label": "pass"}\n\n'
        '{"task_id": 1, "case": "ref", "index": 2, "label": "fail", "note": "the total is wrong"}\n'
        '{"task_id": 1, "case": "ref", "index": 3, "label": "pass"}\n'
        '{"task_id": 1, "case": "m1", "index": 0, "label": "pass"}\n'
        '{"task_id": 1, "case": "m1", "index": 1, "label": "fail"}\n'
        '{"task_id": 1, "case": "m1", "index": 2, "label": "fail"}\n'
        '{"task_id": 1, "case": "nope", "index": 0, "label": "fail"}\n',
    )
    given = read_labels(path)
    assert len(given.labels) == 8 and given.labels[2].note == "the total is wrong"
    results = [_case("A", "ref", "ooooo"), _case("A", "m1", "of---", kind="label_changed", expect=1)]
    report = _report(results, labels=given)
    (h,) = report.human
    # Matched: ref 0-3 (person fails 2, the design passes it), m1 0-1; m1 2 never ran, nope is no case.
    assert (h.labelled, h.matched) == (7, 6)
    assert (h.both_pass, h.human_pass_design_fail, h.human_fail_design_pass, h.both_fail) == (4, 0, 1, 1)
    assert h.agreement == pytest.approx(5 / 6)
    # p_o = 5/6; the person passes 4/6, the design 5/6: p_e = (4 * 5 + 2 * 1) / 36.
    assert h.kappa == pytest.approx((5 / 6 - 22 / 36) / (1 - 22 / 36))
    assert h.kappa is not None and h.kappa_ci is not None and h.kappa_ci.low <= h.kappa <= h.kappa_ci.high
    assert h.agreement_ci is not None and h.agreement_ci.low <= 5 / 6 <= h.agreement_ci.high
    assert report.labels is not None
    assert (report.labels.file, report.labels.labels, report.labels.without_case) == (str(path), 8, 1)
    (row,) = human_rows(report)
    assert (row["matched"], row["agreed"], row["person fail, design pass"]) == (6, 5, 1)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"task_id": 1, "case": "ref", "index": 0, "label": "pass"}\n{"task_id": 1,\n', ":2: not JSON"),
        ('{"task_id": 1, "case": "ref", "index": 0}\n', ":1: label: Field required"),
        (
            '\n{"task_id": 1, "case": "ref", "index": 0, "label": "yes"}\n',
            ":2: label: Input should be 'pass' or 'fail'",
        ),
        (
            '{"task_id": "1", "case": "ref", "index": 0, "label": "pass"}\n',
            ":1: task_id: Input should be a valid integer",
        ),
        ('{"task_id": 1, "case": "ref", "index": -1, "label": "pass"}\n', ":1: index"),
        ("[1, 2]\n", ":1: not a JSON object"),
        (
            '{"task_id": 1, "case": "r", "index": 0, "label": "pass"}\n'
            '{"task_id": 1, "case": "r", "index": 0, "label": "fail"}\n',
            ":2: task 1 case 'r' action 0 already labelled on line 1",
        ),
        ("\n\n", ": no label in the file"),
    ],
)
def test_a_bad_labels_file_is_one_line_naming_file_and_line(tmp_path: Path, text: str, says: str) -> None:
    path = _labels(tmp_path, text)
    with pytest.raises(UserError) as caught:
        read_labels(path)
    message = str(caught.value)
    assert len(message.splitlines()) == 1 and message.startswith(str(path)) and says in message, message


def test_a_missing_labels_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'none.jsonl'}: cannot read the labels file")):
        read_labels(tmp_path / "none.jsonl")


# -- tables and page ----------------------------------------------------------------------------


def _full() -> LabReport:
    results = [*_five("A"), *(r.model_copy(update={"design": "B"}) for r in _five("B")[:2])]
    labels = LabelFile(file="people.jsonl", labels=[])
    return _report(results, labels=labels)


def test_every_table_prints_whole_in_a_narrow_terminal() -> None:
    report = _full()
    out = io.StringIO()
    console = Console(file=out, width=80)
    tables = (
        score_rows,
        undetermined_rows,
        kind_rows,
        action_type_rows,
        mcnemar_rows,
        human_rows,
        wrong_rows,
    )
    for rows in tables:
        print_rows(console, rows(report), rows.__name__)
    text = out.getvalue()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    assert "accuracy 95% CI" in text and "per-action 95% CI" in text
    assert "state 2 is shown" in " ".join(text.split())


def test_html_page_shows_the_new_tables(tmp_path: Path) -> None:
    page = write_lab_html(tmp_path / "lab.html", _full()).read_text()
    for heading in ("Undetermined answers", "Accuracy by case kind", "Per-action accuracy by action type",
                    "McNemar", "Agreement with human labels", "Cases judged wrong"):  # fmt: skip
        assert heading in page, heading
    assert "state 2 is shown" in page and "A reasons about 2" in page
    assert "percentile bootstrap over cases, 2000 resamples, seed 0" in page
