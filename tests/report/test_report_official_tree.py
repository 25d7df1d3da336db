"""``iwr report`` on a results tree written by the official scripts, with numbers worked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iwr_bench.cli import main
from iwr_bench.errors import UserError
from iwr_bench.report.official_tree import OfficialTree, is_official_tree


def _write(root: Path, task: str, model: str, data: object) -> None:
    folder = root / task / model
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "eval.json").write_text(json.dumps(data), encoding="utf-8")


def _eval(
    total: int, success: int, ocr: list[float], dino: list[float], mllm: list[float]
) -> dict[str, object]:
    return {
        "total_step": total,
        "success_step": success,
        "all_ocr_scores": ocr,
        "all_dino_scores": dino,
        "all_mllm_scores": mllm,
        "assertion_results": [],
    }


def test_the_official_tables_from_a_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "results"
    # task 1: 2 of 4 steps; lists cut to 3 entries: OCR (0.9+0.6+0.3)/3 = 0.6, DINO 0.8, HFS 0.5
    _write(
        tree, "1", "gpt-4.1", _eval(4, 2, [0.9, 0.6, 0.3, 0.0], [0.8, 0.8, 0.8, 0.1], [0.5, 0.5, 0.5, 1.0])
    )
    # task 2: all 2 steps, no rubric answers (HFS 0): OCR 1, DINO 0.5
    _write(tree, "2", "gpt-4.1", _eval(2, 2, [1.0, 1.0, 1.0], [0.5, 0.5, 0.5], []))
    _write(tree, "2", "other", "not an object")  # named and left out
    _write(tree, "3", "other", {**_eval(2, 0, [], [], []), "no_page": True})  # ours: a missing page
    (tree / "reports").mkdir()  # the official reports folder is no task
    assert is_official_tree(tree) and not is_official_tree(tmp_path / "missing")
    assert main(["report", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "left out" in out and "2/other/eval.json" in out
    rows = json.loads((tree / "report" / "gpt-4.1_metrics.json").read_text())
    # task 1: IFS 50, LFS 70, VFS 60, Final 0.7*50 + 0.3*60 = 53; task 2: IFS 100, LFS 75, VFS 37.5,
    # Final 70 + 11.25 = 81.25; avg Final 67.125
    assert rows[0] == {
        "task": "1",
        "IFS": 50.0,
        "OCR": 60.0,
        "DINO": 80.0,
        "LFS": 70.0,
        "HFS": 50.0,
        "VFS": 60.0,
        "Final": 53.0,
    }
    assert rows[1]["VFS"] == 37.5 and rows[1]["Final"] == 81.25
    assert rows[2]["task"] == "avg" and rows[2]["Final"] == pytest.approx(67.12, abs=0.01)
    table = (tree / "report" / "gpt-4.1_metrics.md").read_text()
    assert "| task | IFS | OCR | DINO | LFS | HFS | VFS | Final |" in table and "| avg |" in table
    board = json.loads((tree / "report" / "leaderboard.json").read_text())
    assert [row["model"] for row in board] == ["gpt-4.1"]
    assert OfficialTree.read(tree).missing_pages == {"other": 1}


def test_a_folder_with_nothing_to_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "1" / "m").mkdir(parents=True)
    with pytest.raises(UserError, match="holds no"):
        OfficialTree.read(tmp_path)
