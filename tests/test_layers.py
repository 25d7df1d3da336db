"""Which packages may import which: the scoring package sits below the engine and the reports.

Read from the source (every ``from iwr_bench.X ...`` and ``import iwr_bench.X`` of every module),
so a new arrow the wrong way fails here naming the module that drew it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "iwr_bench"

ABOVE: dict[str, set[str]] = {
    "scoring": {"engine", "report", "cli", "tui", "tools", "lab"},
    "metrics": {"scoring", "engine", "report", "cli", "tui", "agents", "lab"},
    "dataset": {"engine", "report", "cli", "tui", "agents", "scoring", "lab"},
    "engine": {"report", "cli", "tui", "lab"},
    "report": {"cli", "tui"},
}
"""For a package, the packages (or top-level modules) its modules must not import."""


def _imports(path: Path) -> set[str]:
    """The first component under ``iwr_bench`` of everything a module imports from the project."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "iwr_bench" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("package", sorted(ABOVE))
def test_no_package_imports_one_above_it(package: str) -> None:
    wrong = [
        f"{path.relative_to(PACKAGE.parent)} imports iwr_bench.{target}"
        for path in sorted((PACKAGE / package).rglob("*.py"))
        for target in sorted(_imports(path) & ABOVE[package])
    ]
    assert not wrong, "\n".join(wrong)


def test_the_engine_and_the_reports_take_scores_from_scoring() -> None:
    """Nothing of the scoring pipeline is left under agents/ (one home per concept)."""
    assert not (PACKAGE / "agents" / "judge" / "evaluate.py").exists()
    assert not (PACKAGE / "agents" / "judge" / "official.py").exists()
    assert not (PACKAGE / "metrics" / "scoring.py").exists()
