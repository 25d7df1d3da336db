"""``iwr judges eval`` on built-in tasks and their mutants, run on the engine with real Chromium.

The default offline design must judge every reference at IFS 100 and every mutant at its expected
step; a deliberately weak design (an assertion judge that always says yes) must get exactly the
cases that need no assertion to fail, and disagree with the default design exactly where a mutant
should fail an assertion. Judging twice with the offline design changes no verdict; a model-backed
design asked twice is asked twice (the repeat is not read from the stores). The report read back
from the run's store is the one the command printed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply

from iwr_bench import lab as lab_api
from iwr_bench.cli import main
from iwr_bench.engine.store import RunStore
from iwr_bench.suites.build import MUTANTS, SAMPLE

HERE = Path(__file__).parent
WEAK = str(HERE / "always_yes_judge.py")
TASKS = (101, 102)


def _mutants() -> list[dict[str, Any]]:
    return [
        json.loads((folder / "mutant.json").read_text())
        for tid in TASKS
        for folder in sorted((MUTANTS / str(tid)).iterdir())
    ]


def _steps(tid: int) -> int:
    for line in (SAMPLE / "data.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["id"] == tid:
            return len(record["action_sequence"])
    raise AssertionError(tid)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("lab")
    argv = [
        "judges", "eval", "--only", ",".join(map(str, TASKS)), "--plugin", WEAK,
        "--design", "heuristic", "--design", "assertions=always-yes,label=weak",
        "--out", str(out), "--html", str(out / "lab.html"), "--quiet",
    ]  # fmt: skip
    assert main(argv) == 0
    return json.loads((out / "report.json").read_text()), out


def _score(report: dict[str, Any], design: str) -> dict[str, Any]:
    return next(s for s in report["scores"] if s["design"] == design)


pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]


def test_default_design_gets_every_reference_and_mutant_right(lab: tuple[dict[str, Any], Path]) -> None:
    s = _score(lab[0], "heuristic")
    mutants = _mutants()
    failing = [m for m in mutants if m["expected_first_failure"] is not None]
    assert (s["references"], s["references_ok"]) == (len(TASKS), len(TASKS))
    assert (s["mutants"], s["mutants_at_step"], s["mutants_ok"]) == (len(failing),) * 3
    assert (s["harmless"], s["harmless_ok"]) == (len(mutants) - len(failing),) * 2
    assert s["cases"] == s["correct"] == len(TASKS) + len(mutants)
    assert s["accuracy"] == 1.0 and s["mean_abs_step_error"] == 0.0
    assert s["crashed"] == 0 and s["error_rate"] == 0.0
    assert s["cost_per_action"] == 0.0 and s["usage"]["requests"] == 0
    assert s["seconds_per_action"] > 0 and s["changed_rate"] is None


def test_weak_design_gets_exactly_the_cases_that_need_no_assertion(lab: tuple[dict[str, Any], Path]) -> None:
    report = lab[0]
    s = _score(report, "weak")
    mutants = _mutants()
    failing = [m for m in mutants if m["expected_first_failure"] is not None]
    by_assertion = [m for m in failing if m["expected_reason"] == "assertion_failed"]
    assert by_assertion, "the subset must hold mutants that only an assertion catches"
    assert s["references_ok"] == len(TASKS)
    assert s["mutants_at_step"] == s["mutants_ok"] == len(failing) - len(by_assertion)
    assert s["correct"] == len(TASKS) + len(mutants) - len(by_assertion)
    assert s["accuracy"] == pytest.approx(s["correct"] / (len(TASKS) + len(mutants)))
    assert s["undetermined_rate"] == 0.0  # it never hesitates
    weak = {(r["task_id"], r["case"]): r for r in report["results"] if r["design"] == "weak"}
    errors: list[int] = []
    for key, r in weak.items():
        found = r["total_steps"] if r["first_failure"] is None else r["first_failure"]
        expected = r["total_steps"] if r["expected_first_failure"] is None else r["expected_first_failure"]
        errors.append(abs(found - expected))
        if key in {(m["task_id"], m["name"]) for m in by_assertion}:
            assert found > expected, (key, r["first_failure"])  # the broken step passes
    assert s["mean_abs_step_error"] == pytest.approx(sum(errors) / len(errors))
    assert s["mean_abs_step_error"] > 0


def test_agreement_lists_exactly_the_assertion_mutants(lab: tuple[dict[str, Any], Path]) -> None:
    report, out = lab
    (pair,) = report["agreements"]
    assert (pair["a"], pair["b"]) == ("heuristic", "weak")
    mutants = _mutants()
    by_assertion = {
        (m["task_id"], m["name"], m["expected_first_failure"])
        for m in mutants
        if m["expected_reason"] == "assertion_failed"
    }
    found = {(d["task_id"], d["case"], d["index"]) for d in pair["disagreements"]}
    assert found == by_assertion
    # Both designs ran every action the default design ran (the weak one never stops earlier).
    ran = sum(_steps(t) for t in TASKS) + sum(
        _steps(m["task_id"]) if m["expected_first_failure"] is None else m["expected_first_failure"] + 1
        for m in mutants
    )
    assert pair["actions"] == ran
    both_fail = sum(1 for m in mutants if m["expected_reason"] == "element_not_found")
    only_default_fails = len(by_assertion)
    both_pass = ran - both_fail - only_default_fails
    p_o = (both_pass + both_fail) / ran
    default_fail = (both_fail + only_default_fails) / ran
    weak_fail = both_fail / ran
    p_e = default_fail * weak_fail + (1 - default_fail) * (1 - weak_fail)
    assert pair["agreement"] == pytest.approx(p_o)
    assert pair["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
    d = pair["disagreements"][0]
    assert d["a"]["status"] == "failed" and d["a"]["verdict"] == "no"
    assert d["b"]["status"] == "ok" and d["b"]["reasoning"].endswith("always yes")
    page = (out / "lab.html").read_text()
    assert "always yes" in page and page.count("<img ") >= 2 * len(by_assertion)
    for rel in (x.split("'")[0] for x in page.split("<img src='")[1:]):
        assert (out / rel).is_file(), rel


def test_repeat_judging_changes_no_verdict_offline(tmp_path: Path) -> None:
    cases = tmp_path / "cases" / "102"
    for name in ("header-and-stats-restyled", "packing-label-changed"):
        shutil.copytree(MUTANTS / "102" / name, cases / name)
    argv = [
        "judges", "eval", "--only", "102", "--no-references", "--cases", str(tmp_path / "cases"),
        "--repeat", "2", "--out", str(tmp_path / "out"), "--quiet",
    ]  # fmt: skip
    assert main(argv) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    (s,) = report["scores"]
    assert s["repeats"] == 2 and s["cases"] == 2 and s["correct"] == 2
    assert s["changed_rate"] == 0.0
    assert sorted({(r["case"], r["repeat"]) for r in report["results"]}) == [
        ("header-and-stats-restyled", 1), ("header-and-stats-restyled", 2),
        ("packing-label-changed", 1), ("packing-label-changed", 2),
    ]  # fmt: skip


def _verdict(verdict: str) -> Reply:
    return Reply(
        tool_call=("final_result", f'{{"reasoning": "the model says {verdict}", "verdict": "{verdict}"}}')
    )


def test_the_evaluation_is_a_run_whose_store_gives_the_report(
    lab: tuple[dict[str, Any], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    report, out = lab
    with RunStore.open_run(out, readonly=True) as store:
        assert store.manifest()["front"] == "judges eval"
        assert store.manifest()["judge_labels"] == ["heuristic", "weak"]
        judged = {j.id for j in store.jobs("judge")}
    cases = len(TASKS) + len(_mutants())
    assert len(judged) == 2 * cases and "judge/102/oracle/heuristic" in judged
    assert "judge/102/mutants_ridge-details-handler-removed/weak" in judged
    assert main(["judges", "eval", "--out", str(out), "--report", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == report
    assert lab_api.report_run(out).model_dump(mode="json") == report
    shots = [a["screenshot"] for r in report["results"] for a in r["actions"] if a["screenshot"]]
    assert shots and all(Path(p).is_file() and Path(p).is_relative_to(out) for p in shots)


def _verdict(verdict: str) -> Reply:
    return Reply(
        tool_call=("final_result", f'{{"reasoning": "the model says {verdict}", "verdict": "{verdict}"}}')
    )


@pytest.mark.anyio
async def test_an_llm_design_is_metered_and_its_changed_verdicts_counted(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    cases = tmp_path / "cases" / "102"
    shutil.copytree(MUTANTS / "102" / "header-and-stats-restyled", cases / "header-and-stats-restyled")
    # One page at a time: the first judging to get the browser asks twice (yes, yes), the other once
    # (no: the model, asked again, now disagrees).
    fake.replies = [_verdict("yes"), _verdict("yes"), _verdict("no")]
    measured = await lab_api.evaluate_async(
        [f"assertions=llm,model=judge-vlm,base_url={fake.url},label=fake"],
        only="102", references=False, cases=[tmp_path / "cases"], repeat=2, pages_at_once=1,
        judge_calls=1, judge_cache=False, out=tmp_path / "out",
    )  # fmt: skip
    first, second = sorted(measured.results, key=lambda r: r.first_failure or 99, reverse=True)
    assert first.correct and first.first_failure is None
    asserted = [a.index for a in first.actions if a.verdict is not None]
    assert asserted == [2, 4] and second.first_failure == 2 and not second.correct
    assert second.actions[2].reasoning.endswith("the model says no")
    (s,) = measured.scores
    assert s.usage.requests == len(fake.requests) == 3  # two assertions, then one
    assert (s.usage.input_tokens, s.usage.output_tokens) == (3000, 1500)  # the fake's usage per answer
    assert s.cost_per_action is None  # a local model has no price: never shown as free
    assert s.changed_rate == pytest.approx(6 / 8)  # action 2 flips, 3-7 are no longer run


_VOLATILE = {"seconds", "wall_s", "seconds_per_action", "screenshot"}


def _stable(data: Any) -> Any:
    """A report's JSON without wall times and screenshot paths (all two judgings may differ in)."""
    if isinstance(data, dict):
        return {k: _stable(v) for k, v in data.items() if k not in _VOLATILE}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(data, list):
        return [_stable(v) for v in data]  # pyright: ignore[reportUnknownVariableType]
    return data


def test_the_python_api_gives_the_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases" / "102" / "ridge-details-handler-removed"
    shutil.copytree(MUTANTS / "102" / "ridge-details-handler-removed", cases)
    argv = ["judges", "eval", "--only", "102", "--no-references", "--cases", str(tmp_path / "cases"),
            "--json", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    measured = lab_api.evaluate(["heuristic"], only="102", references=False, cases=[tmp_path / "cases"])
    assert _stable(measured.model_dump(mode="json")) == _stable(printed)
    (s,) = measured.scores
    assert (s.cases, s.correct, s.deciding_actions, s.deciding_actions_right) == (1, 1, 3, 3)
    assert {b.group for b in s.by_action_type} == {"Scroll", "Click"}
