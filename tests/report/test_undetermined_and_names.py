"""The undetermined assertion rate reaches eval.json, the run summary and the leaderboard; terminal
tables never cut a model name, even at 80 columns."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from iwr_bench.agents.judge.records import ActionRecord, AssertionVerdict, Replay, undetermined_rate
from iwr_bench.cli.judge import _print_summary  # pyright: ignore[reportPrivateUsage]
from iwr_bench.engine.run import run_summary
from iwr_bench.engine.store import RunStore
from iwr_bench.protocol import EvalProtocol
from iwr_bench.report import build_report
from iwr_bench.report.render import print_rows
from iwr_bench.report.run_table import print_summary
from iwr_bench.scoring.evaluation import Evaluation

NAMES = [
    "mutant-merge-into-8-broken-visible-text-judge-seed-1",
    "mutant-merge-into-8-broken-page-text-judge-seed-1",
    "oracle-reference-recorded-2026-12-03-visible-text",
]


def _model_column(text: str) -> str:
    """The first column's fragments, joined in order (a folded name comes back whole)."""
    parts = [line.split("│")[1].strip() for line in text.splitlines() if line.count("│") >= 3]
    return "".join(parts)


def _assert_whole(text: str) -> None:
    assert "…" not in text
    column = _model_column(text)
    for name in NAMES:
        assert name in column, (name, text)


def test_run_summary_table_keeps_names_whole_at_80_columns() -> None:
    model = {
        "tasks": 2, "judged": 2, "ifs": 0.5, "ifs_micro": 0.5, "lvs": 0.4, "hvs": None, "vfs": 0.4,
        "final": 0.47, "lvs_only": True, "failures": {}, "undetermined": 0.25, "cost_usd": 0.0,
    }  # fmt: skip
    out = io.StringIO()
    print_summary({"run_dir": "r", "models": dict.fromkeys(NAMES, model)}, Console(file=out, width=80))
    _assert_whole(out.getvalue())
    assert "25%" in out.getvalue()


def _evaluation(model: str, verdicts: list[str]) -> Evaluation:
    actions = [
        ActionRecord(
            index=i, type="Click", description="x", status="ok",
            assertion=AssertionVerdict(verdict=v, reasoning="", judge="heuristic"),  # type: ignore[arg-type]
        )
        for i, v in enumerate(verdicts)
    ]  # fmt: skip
    replay = Replay(total_steps=len(actions), success_steps=len(actions), actions=actions)
    return Evaluation(
        task_id=1, model=model, total_step=len(actions), success_step=len(actions), ifs=1.0, lvs=1.0,
        hvs=None, vfs=1.0, final=1.0, lvs_only=True, backends=[], replay=replay,
    )  # fmt: skip


def test_judge_summary_keeps_names_whole_and_shows_the_rate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    results = [_evaluation(name, ["yes", "undetermined", "yes", "no"]) for name in NAMES]
    _print_summary(results, NAMES, EvalProtocol.default)
    text = capsys.readouterr().out
    _assert_whole(text)
    assert "25%" in text


def test_report_rows_keep_names_whole_at_80_columns() -> None:
    out = io.StringIO()
    rows = [{"model": n, "tasks": 12, "IFS": 45.1, "Final": 40.2, "backends": "phash, effnet"} for n in NAMES]
    print_rows(Console(file=out, width=80), rows, "leaderboard")
    _assert_whole(out.getvalue())


@pytest.mark.browser
def test_undetermined_rate_in_eval_json_summary_and_leaderboard(finished_run: Path, tmp_path: Path) -> None:
    evals = {p.parent.name: json.loads(p.read_text()) for p in finished_run.rglob("eval.json")}
    assert evals
    store = RunStore.open_run(finished_run, readonly=True)
    try:
        summary = run_summary(store)["models"]
    finally:
        store.close()
    board = {
        r["model"]: r
        for r in json.loads((build_report(finished_run, tmp_path / "r") / "leaderboard.json").read_text())
    }
    for model in summary:
        records = [e for e in evals.values() if e["model"] == model]
        verdicts = [
            (a.get("assertion") or {}).get("verdict") for e in records for a in e["replay"]["actions"]
        ]
        for e in records:
            own = [(a.get("assertion") or {}).get("verdict") for a in e["replay"]["actions"]]
            assert e["undetermined_rate"] == undetermined_rate(own)
        expected = undetermined_rate(verdicts)
        assert summary[model]["undetermined"] == expected
        assert board[model]["undetermined %"] == (None if expected is None else round(100 * expected, 1))
    oracle = summary["oracle"]["undetermined"]
    # the packing list ends below the fold, but the screen is the recording's own: nothing undetermined
    assert oracle == 0.0
