"""``iwr_bench.lab``: options, designs, labels and the measurement, with no browser.

Results are made by a stand-in that judges every case from its expectation, and measured with
``lab.report``: what a report counts, that a saved report measures the same again, and that bad
options and labels files stop the command before any run is made. ``tests/agents/test_judge_lab.py``
judges real pages on the engine and compares the command's JSON with ``lab.evaluate`` and with
``lab.report_run`` over the run's store.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from iwr_bench import lab
from iwr_bench.agents.judge.lab import ActionOutcome, Case, CaseResult, DesignSpec, Usage
from iwr_bench.cli import main
from iwr_bench.dataset.layout import Task
from iwr_bench.errors import UserError
from iwr_bench.report.judge_eval import LabReport

DESIGNS = ["heuristic", "assertions=heuristic,label=other"]


def _judged(design: str, repeat: int, case: Case, task: Task) -> CaseResult:
    """A stand-in judging: right, except that ``other`` passes every page and answers undetermined."""
    n = len(task.record.action_sequence)
    fail = None if design == "other" else case.expected_first_failure
    actions = [
        ActionOutcome(
            index=i,
            description=a.parameters.description,
            status="ok" if fail is None or i < fail else "failed" if i == fail else "not_run",
            failure=case.expected_reason if i == fail else None,
            verdict=("undetermined" if design == "other" else "yes") if a.has_assertion else None,
            seconds=0.25,
        )
        for i, a in enumerate(task.record.action_sequence)
    ]
    return CaseResult(
        design=design, repeat=repeat, task_id=case.task_id, case=case.name, kind=case.kind,
        expected_first_failure=case.expected_first_failure, expected_reason=case.expected_reason,
        total_steps=n, first_failure=fail, reason=case.expected_reason if fail is not None else None,
        actions=actions, seconds=1.0,
    )  # fmt: skip


def _stand_in(repeat: int = 1) -> list[CaseResult]:
    """Every case of task 102 (its reference and mutants) judged by both designs of ``DESIGNS``."""
    tasks, cases = lab.cases_from(lab.LabConfig(only="102"))
    return [
        _judged(d.label, rep, c, tasks[c.task_id])
        for d in lab.designs_from(DESIGNS)
        for rep in range(1, repeat + 1)
        for c in cases
    ]


def _measure(labels: Path | None, repeat: int = 1) -> LabReport:
    tasks, _ = lab.cases_from(lab.LabConfig(only="102"))
    designs = lab.designs_from(DESIGNS)
    usage = {d.label: Usage() for d in designs}
    wall = {d.label: 2.0 for d in designs}
    return lab.report(
        _stand_in(repeat), designs, tasks=tasks.values(), labels=labels, usage=usage, wall_s=wall
    )


@pytest.fixture
def labels(tmp_path: Path) -> Path:
    path = tmp_path / "labels.jsonl"
    lines = [{"task_id": 102, "case": "reference", "index": i, "label": "pass"} for i in range(3)] + [
        {"task_id": 102, "case": "ridge-details-handler-removed", "index": 2, "label": "fail"}
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_the_report_measures_what_was_judged(labels: Path) -> None:
    measured = _measure(labels, repeat=2)
    # The design passing everything misses both failing mutants, and every case of it leaned on an
    # undetermined answer (task 102 asserts at actions 2 and 4).
    other = next(s for s in measured.scores if s.design == "other")
    assert (other.cases, other.correct, other.undetermined_cases) == (4, 2, 4)
    assert other.strict_accuracy == 0.0 and other.decided_accuracy is None
    (m,) = measured.mcnemar
    assert (m.a_only, m.b_only) == (2, 0) and m.p_value == 0.5
    assert [h.matched for h in measured.human] == [4, 4] and measured.labels is not None
    assert [(w.design, w.case) for w in measured.wrong] == [
        ("other", "packing-label-changed"), ("other", "ridge-details-handler-removed"),
    ]  # fmt: skip


def test_report_measures_saved_results_the_same_way(labels: Path) -> None:
    saved = LabReport.model_validate_json(_measure(labels).model_dump_json())
    again = lab.report(
        saved.results, saved.designs, tasks=saved.actions, labels=labels,
        usage={s.design: s.usage for s in saved.scores}, wall_s=saved.wall_s,
    )  # fmt: skip
    assert again == saved
    bare = lab.report(saved.results)  # no tasks: no breakdown by action type, the rest the same
    assert [s.accuracy for s in bare.scores] == [s.accuracy for s in saved.scores]
    assert all(not s.by_action_type for s in bare.scores) and bare.human == []


def test_a_bad_labels_file_stops_the_cli_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"task_id": 102, "case": "reference", "index": 0, "label": "pass"}\n{"task_id": 102}\n')
    out = tmp_path / "out"
    assert main(["judges", "eval", "--only", "102", "--labels", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{path}:2:" in err and "case" in err
    assert not out.exists()  # no run was made, no page judged


def test_report_needs_a_judges_eval_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judges", "eval", "--report", "--out", str(tmp_path)]) == 2
    assert "holds no run" in capsys.readouterr().err
    with pytest.raises(UserError, match="needs the run folder"):
        lab.prepare(resume=True)


def test_evaluate_refuses_an_unknown_option() -> None:
    with pytest.raises(UserError, match="lab option onlyy: Extra inputs are not permitted"):
        lab.evaluate(onlyy="102")
    with pytest.raises(UserError, match="lab option repeat"):
        lab.evaluate(repeat=0)


DOC = Path(__file__).parents[2] / "docs" / "judge-eval-report.md"


def _models(model: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    """Every model a report holds, by name (the designs' own fields are documented by ``--help``)."""
    seen[model.__name__] = model
    for field in model.model_fields.values():
        stack: list[Any] = [field.annotation]
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                if t.__name__ not in seen and t is not DesignSpec:
                    _models(t, seen)
            else:
                stack.extend(get_args(t))
    return seen


def test_every_report_field_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### `(\w+)`\n(.*?)(?=^### |\Z)", text, flags=re.M | re.S))
    for name, model in _models(LabReport, {}).items():
        assert name in sections, f"no section for {name}"
        for field in model.model_fields:
            assert f"`{field}`" in sections[name], f"{name}.{field} is not documented"


def test_designs_are_given_as_texts_specs_or_one_of_them() -> None:
    assert [d.label for d in lab.designs_from("heuristic")] == ["heuristic"]  # one text, not its letters
    assert [d.label for d in lab.designs_from([])] == ["heuristic"]
    both = lab.designs_from(["heuristic", DesignSpec(label="heuristic")])
    assert [d.label for d in both] == ["heuristic", "heuristic #2"]
