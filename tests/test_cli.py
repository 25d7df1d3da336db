from __future__ import annotations

import pytest

from iwr_bench.cli import main


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
