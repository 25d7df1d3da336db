"""The end-of-run table of ``iwr run`` and ``iwr runs show``, and the work-clock lines."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from iwr_bench.dataset.layout import skipped_line
from iwr_bench.engine.run import RunOutcome
from iwr_bench.engine.summary import substitute_lines, unseen_lines


def work_split(outcome: RunOutcome) -> dict[str, Any]:
    """This session's work clock: each stage's busy time, the engine's overhead, each limit's idle time."""
    return {
        "busy_s": dict(outcome.work_s),
        "overhead_s": round(outcome.overhead_s, 3),
        "limit_idle_s": dict(outcome.limit_idle_s),
    }


def work_line(work: dict[str, Any]) -> str:
    """The work clock in two short lines (seconds)."""
    busy = ", ".join(f"{k} {v:.1f}" for k, v in work["busy_s"].items())
    idle = ", ".join(f"{k} {v:.1f}" for k, v in work["limit_idle_s"].items())
    return f"busy s: {busy}; engine overhead {work['overhead_s']:.1f}\nidle s: {idle}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


_COLUMNS = ("model", "judged", "IFS", "IFS micro", "LVS", "HVS", "VFS", "Final", "failures", "undet.", "cost")


def _percent(share: float | None) -> str:
    """A 0-1 share as a whole percentage ("-" when there is none)."""
    return "-" if share is None else f"{100 * share:.0f}%"


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """The per-model table (x100), failure counts and undetermined assertion rate; names are never cut."""
    table = Table(title=f"iwr run: {summary.get('run_dir', '')} (x100)")
    for col in _COLUMNS:
        table.add_column(col, justify="left" if col == "model" else "right", overflow="fold")
    lvs_only = False
    for name, m in summary["models"].items():
        lvs_only |= bool(m["lvs_only"])
        fails = ", ".join(f"{k} {v}" for k, v in sorted(m["failures"].items())) or "0"
        table.add_row(
            name,
            f"{m['judged']}/{m['tasks']}",
            _num(m["ifs"]),
            _num(m["ifs_micro"]),
            _num(m["lvs"]),
            _num(m["hvs"]),
            _num(m["vfs"]),
            _num(m["final"]),
            fails,
            _percent(m.get("undetermined")),
            f"${m['cost_usd']:.4f}",
        )
    console = console or (Console() if sys.stdout.isatty() else Console(width=140))
    console.print(table)
    skipped = int(summary.get("skipped_records") or 0)
    if skipped:
        console.print(skipped_line(skipped) + "; the means are over the tasks that were read")
    _print_protocol_notes(console, summary)
    if lvs_only:
        console.print(
            "HVS unavailable (no rubric judge): VFS and Final use LVS alone and are not paper-comparable."
        )
    for line in [*unseen_lines(summary), *substitute_lines(summary)]:
        console.print(line)


def _print_protocol_notes(console: Console, summary: dict[str, Any]) -> None:
    """Protocol label, tasks left out and a missing HVS counted 0 (official protocol)."""
    models = list(summary["models"].values())
    protocol = next((str(m.get("protocol", "default")) for m in models), "default")
    console.print(f"protocol: {protocol}")
    for name, m in summary["models"].items():
        if m.get("left_out"):
            console.print(
                f"{name}: {m['left_out']} task(s) without index.html left out of the means (official)"
            )
    if protocol == "official" and any(m.get("hvs_missing") for m in models):
        console.print("HVS missing, counted 0 as the official aggregation does")
