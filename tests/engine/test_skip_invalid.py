"""An unreadable line of data.jsonl stops a run with its line number, unless --skip-invalid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iwr_bench.cli import main
from iwr_bench.dataset.layout import skipped_line


def _truncate_last_line(root: Path) -> None:
    jsonl = root / "data.jsonl"
    lines = jsonl.read_text().splitlines()
    jsonl.write_text("\n".join([*lines, lines[-1][: len(lines[-1]) // 2]]) + "\n")


def test_unreadable_line_stops_every_command(tasks_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _truncate_last_line(tasks_root)
    for argv in (
        ["run", "--tasks", str(tasks_root), "--model", "blank", "--out", str(tasks_root / "run")],
        ["generate", "--tasks", str(tasks_root), "--model", "blank", "--out", str(tasks_root / "pages")],
        ["judge", "--tasks", str(tasks_root), "--pages", str(tasks_root), "--out", str(tasks_root / "j")],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "data.jsonl line 3: json:" in err and "--skip-invalid" in err, err
    assert not (tasks_root / "run").exists() and not (tasks_root / "pages").exists()


@pytest.mark.browser
def test_skip_invalid_runs_the_rest_and_counts_the_skipped(
    tasks_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _truncate_last_line(tasks_root)
    run = tasks_root / "run"
    argv = ["run", "--tasks", str(tasks_root), "--model", "blank", "--out", str(run), "--skip-invalid"]
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["skipped_records"] == 1
    assert summary["models"]["blank"]["judged"] == 2
    assert main(["runs", "show", str(run)]) == 0
    assert skipped_line(1) in capsys.readouterr().out
