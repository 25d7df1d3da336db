"""Rows to the terminal (rich), CSV, JSON and Markdown.

A terminal table is printed with one column per field when every column fits the console at its
narrowest honest width (numbers whole, header words whole, names and other long words folded at
16 characters or more). Otherwise the table is turned round, one row per metric and one column per model, when
that fits; else each row becomes its own small table with one row per metric: ``metric | A | B |
B - A`` for a comparison's ``<metric> A``/``<metric> B``/``<metric> delta`` fields, else
``field | value``. Nothing is ever cut to "…".
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

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


NAME_MIN_WIDTH = 16
"""A name column is never narrower than this (or its longest name, if shorter); names fold, never cut."""

_PAIRED = re.compile(r"^(?P<metric>.+) (?P<side>A|B|delta)$")


def _numeric(rows: Sequence[Row], col: str) -> bool:
    return any(_is_number(r.get(col)) for r in rows)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=1)


def column_width(rows: Sequence[Row], col: str, *, name: bool = False, folded_header: bool = False) -> int:
    """The narrowest width at which ``col`` shows every value honestly (see the module doc).

    Numbers stay whole; text wraps between words, and a word longer than :data:`NAME_MIN_WIDTH` (a
    name, an identifier) folds at that width; so do a name column (``name``) and a header that is a
    name (``folded_header``).
    """
    values = [r.get(col) for r in rows]
    if name:
        need = min(max((len(cell(v)) for v in values), default=1), NAME_MIN_WIDTH)
    else:
        need = max(
            (len(cell(v)) if _is_number(v) else min(_longest_word(cell(v)), NAME_MIN_WIDTH) for v in values),
            default=1,
        )
    # A number column never wraps (see :func:`to_rich`), its header included.
    numeric = all(_is_number(v) or v is None for v in values) and any(_is_number(v) for v in values)
    head = len(col) if numeric and not folded_header else _longest_word(col)
    return max(need, min(head, NAME_MIN_WIDTH) if folded_header else head)


def fits(rows: Sequence[Row], cols: Sequence[str], width: int, *, folded_headers: bool = False) -> bool:
    """Whether a one-column-per-field table fits ``width`` (borders and padding: 3 per column + 1)."""
    need = sum(
        column_width(rows, c, name=i == 0, folded_header=folded_headers and i > 0) for i, c in enumerate(cols)
    )
    return need + 3 * len(cols) + 1 <= width


def to_rich(
    rows: Sequence[Row], title: str, skip: Sequence[str] = (), *, folded_headers: bool = False
) -> Table:
    """A rich table, one column per field (numbers right-aligned and never wrapped)."""
    table = Table(title=title)
    cols = [c for c in columns(rows) if c not in skip]
    for i, c in enumerate(cols):
        numeric = all(_is_number(r.get(c)) or r.get(c) is None for r in rows) and _numeric(rows, c)
        table.add_column(
            c,
            justify="right" if numeric else "left",
            overflow="fold",  # names never cut
            no_wrap=numeric,
            min_width=column_width(rows, c, name=i == 0, folded_header=folded_headers and i > 0),
        )
    for row in rows:
        table.add_row(*(cell(row.get(c)) for c in cols))
    return table


def transposed(rows: Sequence[Row], skip: Sequence[str] = ()) -> list[Row] | None:
    """The rows turned round: one row per field, one column per row (named by its first field).

    None when rows share a name, or the fields pair up as a comparison (``<metric> A``/``B``/``delta``).
    """
    cols = [c for c in columns(rows) if c not in skip]
    if not cols or any(_PAIRED.match(c) for c in cols):
        return None
    names = [cell(r.get(cols[0])) for r in rows]
    if len(set(names)) != len(names) or cols[0] in names:
        return None
    return [{cols[0]: c, **{n: r.get(c) for n, r in zip(names, rows, strict=True)}} for c in cols[1:]]


def long_tables(rows: Sequence[Row], skip: Sequence[str] = ()) -> list[Table]:
    """Each row as its own table with one row per metric (see the module doc)."""
    cols = [c for c in columns(rows) if c not in skip]
    if not cols:
        return []
    tables: list[Table] = []
    for row in rows:
        paired: dict[str, dict[str, Any]] = {}
        single: list[str] = []
        for c in cols[1:]:
            m = _PAIRED.match(c)
            if m:
                paired.setdefault(m["metric"], {})[m["side"]] = row.get(c)
            else:
                single.append(c)
        table = Table(title=Text(cell(row.get(cols[0])), style="bold"), show_header=bool(paired))
        if paired:
            for head in ("metric", "A", "B", "B - A"):
                table.add_column(head, justify="left" if head == "metric" else "right", overflow="fold")
            for metric, sides in paired.items():
                table.add_row(metric, *(cell(sides.get(k)) for k in ("A", "B", "delta")))
            table.caption = " · ".join(f"{c}: {cell(row.get(c))}" for c in single) or None
        else:
            table.add_column("field", overflow="fold")
            table.add_column("value", overflow="fold")
            for c in single:
                table.add_row(c, cell(row.get(c)))
        tables.append(table)
    return tables


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
    """Print a table to the terminal: one column per field if that fits, else one row per metric."""
    cols = [c for c in columns(rows) if c not in skip]
    if fits(rows, cols, console.width):
        console.print(to_rich(rows, title, skip))
        return
    turned = transposed(rows, skip)
    if turned and fits(turned, columns(turned), console.width, folded_headers=True):
        console.print(to_rich(turned, title, folded_headers=True))
        return
    console.print(Text(title, style="italic"), justify="center")
    for table in long_tables(rows, skip):
        console.print(table)
