"""Model answers built from the built-in suite's reference pages."""

from __future__ import annotations

from pathlib import Path

SUITE = Path(__file__).resolve().parents[2] / "iwr_bench" / "suites" / "sample"


def reference_answer(task_id: int) -> str:
    """A model answer that reproduces a suite task's reference page (placeholder paths kept)."""
    html = (SUITE / "data" / str(task_id) / "reference" / "index.html").read_text(encoding="utf-8")
    return f"```html\n{html}\n```"
