"""The judge-eval measurement on hand-made records, the --design syntax, and narrow terminal tables."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from iwr_bench.agents.judge.lab import ActionOutcome, CaseResult, DesignSpec, Usage, parse_design
from iwr_bench.cli import main
from iwr_bench.errors import UserError
from iwr_bench.report.judge_eval import agreement, changed_rate, cohen_kappa, lab_report, score
from iwr_bench.report.render import print_rows


def _case(design: str, name: str, statuses: str, repeat: int = 1, verdicts: str = "") -> CaseResult:
    """A case from a status string: o = ok, f = failed, - = not run (verdicts: y/n/u per action)."""
    words = {"o": "ok", "f": "failed", "-": "not_run"}
    said = {"y": "yes", "n": "no", "u": "undetermined", "e": "error", " ": None}
    actions = [
        ActionOutcome(
            index=i,
            description=f"action {i}",
            status=words[c],  # type: ignore[arg-type]
            failure="assertion_failed" if c == "f" else None,
            verdict=said[verdicts[i]] if i < len(verdicts) else None,  # type: ignore[arg-type]
            reasoning=f"{design} says {c}",
            seconds=0.5,
        )
        for i, c in enumerate(statuses)
    ]
    first = statuses.find("f")
    return CaseResult(
        design=design, repeat=repeat, task_id=1, case=name, kind="mutant",
        expected_first_failure=None, expected_reason=None, total_steps=len(statuses),
        first_failure=None if first < 0 else first, reason=None if first < 0 else "assertion_failed",
        actions=actions,
    )  # fmt: skip


def test_kappa_and_agreement_match_a_hand_computation() -> None:
    # Actions both executed: pass/pass 5, A pass B fail 1, A fail B pass 2, fail/fail 2 (n = 10).
    a = [_case("A", "c1", "ooof"), _case("A", "c2", "oof"), _case("A", "c3", "oo"),
         _case("A", "c4", "f-"), _case("A", "c5", "f--")]  # fmt: skip
    b = [_case("B", "c1", "ooof"), _case("B", "c2", "oof"), _case("B", "c3", "f-"),
         _case("B", "c4", "oo"), _case("B", "c5", "oof")]  # fmt: skip
    result = agreement("A", a, "B", b)
    assert (result.actions, result.agreed) == (10, 7)
    assert result.agreement == pytest.approx(0.7)
    # p_o = 0.7; A passes 6/10, B passes 7/10: p_e = 0.6 * 0.7 + 0.4 * 0.3 = 0.54.
    assert result.kappa == pytest.approx((0.7 - 0.54) / (1 - 0.54))
    assert [(d.case, d.index) for d in result.disagreements] == [("c3", 0), ("c4", 0), ("c5", 0)]
    d = result.disagreements[0]
    assert (d.a.reasoning, d.b.reasoning) == ("A says o", "B says f")


def test_kappa_edge_cases() -> None:
    assert cohen_kappa([]) is None
    assert cohen_kappa([("pass", "pass")] * 4) is None  # one answer throughout: chance agreement is 1
    assert cohen_kappa([("pass", "pass"), ("fail", "fail")]) == 1.0
    assert cohen_kappa([("pass", "fail"), ("fail", "pass")]) == -1.0


def test_changed_rate_counts_actions_whose_verdict_changed() -> None:
    one = [_case("A", "c1", "ooo", 1, "yyy"), _case("A", "c2", "of-", 1, "yn")]
    assert changed_rate(one) is None
    two = [*one, _case("A", "c1", "ooo", 2, "yuy"), _case("A", "c2", "oof", 2, "yyn")]
    # executed in some judging: c1 0-2, c2 0-2 (c2 #2 ran only the second time) = 6 actions;
    # changed: c1 #1 (yes -> undetermined), c2 #1 (failed -> ok), c2 #2 (not run -> failed).
    assert changed_rate(two) == pytest.approx(3 / 6)
    same = [*one, *(c.model_copy(update={"repeat": 2}) for c in one)]
    assert changed_rate(same) == 0.0


def test_score_counts_references_mutants_and_step_error() -> None:
    ref = _case("A", "reference", "ooo").model_copy(update={"kind": "reference"})
    caught = _case("A", "m1", "of-").model_copy(
        update={"expected_first_failure": 1, "expected_reason": "assertion_failed"}
    )
    late = _case("A", "m2", "oof").model_copy(
        update={"expected_first_failure": 0, "expected_reason": "assertion_failed"}
    )
    harmless_broken = _case("A", "m3", "f--")  # must pass all three, fails at 0
    usage = Usage(requests=3, cost_usd=0.09)
    s = score("A", [ref, caught, late, harmless_broken], usage)
    assert (s.references, s.references_ok, s.mutants, s.mutants_ok, s.harmless, s.harmless_ok) == (
        1,
        1,
        2,
        1,
        1,
        0,
    )
    assert (s.cases, s.correct, s.accuracy) == (4, 2, 0.5)
    assert s.mean_abs_step_error == pytest.approx((0 + 0 + 2 + 3) / 4)
    assert s.actions == 3 + 2 + 3 + 1
    assert s.cost_per_action == pytest.approx(0.09 / 9) and s.seconds_per_action == pytest.approx(0.5)
    unpriced = score("A", [ref], Usage(requests=1, unpriced=1))
    assert unpriced.cost_per_action is None


def test_lab_report_pairs_every_two_designs() -> None:
    specs = [DesignSpec(label=x) for x in "ABC"]
    results = [_case(x, "c1", "oo") for x in "ABC"]
    report = lab_report(specs, results, {}, {})
    assert [(p.a, p.b) for p in report.agreements] == [("A", "B"), ("A", "C"), ("B", "C")]


def test_design_syntax() -> None:
    spec = parse_design("grounder=heuristic,grounder.threshold=0.6,grounder.semantic=false,votes=3,label=x")
    assert spec.label == "x" and spec.grounder.options == {"threshold": 0.6, "semantic": False}
    assert spec.votes == 3 and spec.assertions.name == "heuristic"
    llm = parse_design("llm,model=openai:gpt-4o")
    assert (llm.grounder.name, llm.assertions.name, llm.model) == ("llm", "llm", "openai:gpt-4o")
    assert llm.label == "llm,model=openai:gpt-4o" and parse_design("heuristic").label == "heuristic"
    # The tool-using step judge and a replay policy are roles a design may set too.
    agent = parse_design("agent,model=openai:gpt-4o,step.max_steps=8,replay=official")
    assert agent.step is not None and (agent.step.name, agent.step.options) == ("agent", {"max_steps": 8})
    assert agent.replay is not None and agent.replay.name == "official"
    assert set(agent.chosen()) == {"grounder", "assertions", "step", "replay"}
    assert parse_design("heuristic").step is None
    for bad, says in [
        ("nope", "no grounder or assertion judge is named 'nope'"),
        ("grounder=nope", "unknown grounder 'nope'"),
        ("colour=red", "unknown key 'colour'"),
        ("votes=many", "votes"),
    ]:
        with pytest.raises(UserError, match=re.escape(says)):
            parse_design(bad)


@pytest.mark.parametrize(
    ("design", "says"),
    [
        ("grounder=heuristic,grounder.bogus=1", "bad options for grounder 'heuristic'"),
        ("llm", "needs a judge model"),
        ("grounder=nope", "unknown grounder 'nope'"),
    ],
)
def test_bad_design_is_one_line_before_any_work(
    design: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["judges", "eval", "--design", "heuristic", "--design", design]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and design in err


# -- narrow terminals ----------------------------------------------------------------------------

NAMES = ["openai:gpt-4o-2024-05-13-with-a-long-suffix", "mutants:merged-tiles-left-hidden", "blank"]


def _comparison() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for k, name in enumerate(NAMES):
        row: dict[str, Any] = {"model": name}
        for j, col in enumerate(("IFS", "VFS", "Final", "LVS", "HVS")):
            row[f"{col} A"], row[f"{col} B"] = 10.0 + k + j / 100, 61.25 + k
            row[f"{col} delta"] = round(row[f"{col} B"] - row[f"{col} A"], 2)
        row["comparable"] = k != 2
        row["differs"] = "" if k != 2 else "judges, only in run B"
        rows.append(row)
    return rows


def _render(width: int) -> str:
    out = io.StringIO()
    print_rows(Console(file=out, width=width), _comparison(), "run-b minus run-a (x100, protocol default)")
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 60])
def test_comparison_in_a_narrow_terminal_shows_one_row_per_metric(width: int) -> None:
    text = _render(width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    joined = "".join(line.strip() for line in text.splitlines())
    for name in NAMES:
        assert name in joined  # folded over lines at most, never cut
    for row in _comparison():
        for col in ("IFS", "VFS", "Final", "LVS", "HVS"):
            line = next(x for x in text.splitlines() if f"│ {col} " in x and f"{row[f'{col} A']:.2f}" in x)
            assert f"{row[f'{col} B']:.2f}" in line and f"{row[f'{col} delta']:.2f}" in line
    assert text.count("B - A") == len(NAMES)
    assert "comparable: no · differs: judges, only in run B" in " ".join(text.split())


def test_comparison_in_a_wide_terminal_keeps_one_column_per_field() -> None:
    text = _render(260)
    header = next(line for line in text.splitlines() if "IFS delta" in line)
    assert "Final delta" in header and "HVS delta" in header
    assert "…" not in text and "B - A" not in text


@pytest.mark.browser
@pytest.mark.timeout(900)  # the first test to ask for the shared finished run pays for it
@pytest.mark.parametrize("columns", ["80", "60"])
def test_iwr_report_a_b_in_a_narrow_terminal(
    finished_run: Path,
    tmp_path: Path,
    columns: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["report", str(finished_run), str(finished_run), "--out", str(tmp_path / "cmp")]) == 0
    text = capsys.readouterr().out
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= int(columns)
    for model in ("oracle", "screenshot", "blank"):
        assert any(line.strip() == model for line in text.splitlines()), model  # each model heads its table
    assert text.count("B - A") == 3
    assert re.search(r"│ IFS\s+│\s+100\.00 │\s+100\.00 │\s+0\.00 │", text)  # the oracle: A, B and B - A


def test_few_rows_turn_round_when_too_wide() -> None:
    rows = [
        {"design": name, "references at IFS 100": "13/13", "accuracy %": 97.5, "step error": 0.12,
         "undetermined %": 38.9, "errors %": 0.0, "s per action": 1.25, "changed on repeat %": 0.0,
         "note": "a long remark that wraps between words"}
        for name in ("heuristic", "grounder=lcs,assertions=quoted-text")
    ]  # fmt: skip
    out = io.StringIO()
    print_rows(Console(file=out, width=70), rows, "iwr judges eval: per design")
    text = out.getvalue()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 70
    assert re.search(
        r"│ accuracy %\s+│ 97\.50\s+│ 97\.50\s+│", text
    )  # one row per metric, a column per design
    header = [line.split("┃") for line in text.splitlines() if line.count("┃") == 4]
    assert "".join(parts[3].strip() for parts in header) == "grounder=lcs,assertions=quoted-text"  # folded


def test_a_cases_folder_without_expectations_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "cases" / "101" / "broken"
    page.mkdir(parents=True)
    (page / "index.html").write_text("<html></html>")
    (page / "mutant.json").write_text('{"kind": "label_changed"}')
    argv = ["judges", "eval", "--only", "101", "--cases", str(tmp_path / "cases"), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "mutant.json" in err and "expected_first_failure" in err
    assert main(["judges", "eval", "--only", "999"]) == 2
    assert "999" in capsys.readouterr().err
