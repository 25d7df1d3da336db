"""Snapshots of the terminal tables at 80 and 180 columns: the comparison and the end-of-run summary."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console
from test_judge_eval import _comparison  # pyright: ignore[reportPrivateUsage]

from iwr_bench.report.render import print_rows


@pytest.mark.parametrize("width", [80, 180])
def test_comparison_snapshot(snapshot: Any, width: int) -> None:
    out = io.StringIO()
    print_rows(Console(file=out, width=width), _comparison(), "run-b minus run-a (x100, protocol default)")
    text = out.getvalue()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    assert text == snapshot
