from __future__ import annotations

from pathlib import Path

import pytest

from iwr_bench.cli import main


def test_demo_validates_and_lists_without_inventing_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "0 error(s)" in out
    assert "no scores are shown" in out
    assert "IFS" not in out and "Final" not in out


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: iwr" in capsys.readouterr().out


def test_python_dash_m_entry_point() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "iwr_bench", "tasks", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "validate" in done.stdout
