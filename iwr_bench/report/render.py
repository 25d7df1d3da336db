"""Rows to the terminal (rich), CSV, JSON and Markdown."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from iwr_bench.report.tables import Row


def cell(value: Any) -> str:
    """A value as table text: numbers with two decimals, dicts as ``k n, ...``, None as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "-"  # pyright: ignore[reportUnknownVariableType]
    return str(value)


def columns(rows: Sequence[Row]) -> list[str]:
    """Column names in first-seen order."""
    return list(dict.fromkeys(k for row in rows for k in row))


def to_csv(rows: Sequence[Row]) -> str:
    """CSV text (dict cells as JSON)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns(rows), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, dict) else v for k, v in row.items()})
    return buf.getvalue()


def to_markdown(rows: Sequence[Row], title: str = "") -> str:
    """A GitHub-flavoured Markdown table."""
    cols = columns(rows)
    lines = [f"### {title}", ""] if title else []
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("| " + " | ".join("---" for _ in cols) + " |")
    for row in rows:
        lines.append("| " + " | ".join(cell(row.get(c)).replace("|", "/") for c in cols) + " |")
    return "\n".join(lines) + "\n"


def to_rich(rows: Sequence[Row], title: str, skip: Sequence[str] = ()) -> Table:
    """A rich table (numbers right-aligned)."""
    table = Table(title=title)
    cols = [c for c in columns(rows) if c not in skip]
    for c in cols:
        numeric = any(isinstance(r.get(c), int | float) and not isinstance(r.get(c), bool) for r in rows)
        table.add_column(c, justify="right" if numeric else "left", overflow="fold")  # names never cut
    for row in rows:
        table.add_row(*(cell(row.get(c)) for c in cols))
    return table


def write_tables(out: Path, name: str, rows: Sequence[Row], title: str) -> list[Path]:
    """``<name>.csv``, ``<name>.json`` and ``<name>.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        out / f"{name}.csv": to_csv(rows),
        out / f"{name}.json": json.dumps(list(rows), indent=2) + "\n",
        out / f"{name}.md": to_markdown(rows, title),
    }
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    return list(files)


def print_rows(console: Console, rows: Sequence[Row], title: str, skip: Sequence[str] = ()) -> None:
    """Print a table to the terminal."""
    console.print(to_rich(rows, title, skip))
