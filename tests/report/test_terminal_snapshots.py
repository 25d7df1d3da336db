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


@pytest.mark.parametrize("width", [80, 180])
def test_run_summary_names_every_substitute_backend(width: int) -> None:
    from iwr_bench.report.run_table import print_summary

    model = {
        "tasks": 2, "judged": 2, "ifs": 0.5, "ifs_micro": 0.5, "lvs": 0.4, "hvs": None, "vfs": 0.4,
        "final": 0.47, "lvs_only": True, "failures": {}, "undetermined": 0.25, "cost_usd": 0.0,
    }  # fmt: skip
    substitutes = ["dino: clip-vit-b-32 stand-in (substitute)", "ocr: tesseract (substitute)"]
    out = io.StringIO()
    summary = {"run_dir": "r", "models": {"a-model-with-a-long-name-2026": model}, "substitutes": substitutes}
    print_summary(summary, Console(file=out, width=width))
    text = out.getvalue()
    for label in substitutes:
        assert f"substitute backend in use: {label}" in " ".join(text.split())
    out = io.StringIO()
    print_summary({**summary, "substitutes": []}, Console(file=out, width=width))
    assert "substitute backend" not in out.getvalue()
