"""Reports of finished runs: the paper's leaderboard, breakdowns, plots, comparisons, HTML evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from iwr_bench.agents.generation.wire import sent_line
from iwr_bench.dataset.layout import skipped_line
from iwr_bench.report.data import RunData
from iwr_bench.report.render import print_rows, write_tables
from iwr_bench.report.tables import action_types, all_breakdowns, compare, differences, leaderboard

__all__ = ["RunData", "build_report", "compare_runs"]


def build_report(run_dir: Path, out: Path, console: Console | None = None, *, html: bool = True) -> Path:
    """Write leaderboard and breakdown tables (CSV, JSON, Markdown), plots and ``index.html``.

    Returns the report folder.

    Raises:
        UserError: when ``run_dir`` is not a run folder.
    """
    from iwr_bench.report.plots import write_plots

    run = RunData.load(run_dir)
    board = leaderboard(run)
    breakdowns = all_breakdowns(run)
    sent: dict[str, dict[str, Any]] = run.manifest.get("sent_settings") or {}
    label = run.protocol_label
    write_tables(out, "leaderboard", board, f"Leaderboard: {run_dir.name} (x100, {label})")
    write_tables(out, "breakdowns", breakdowns, f"Breakdowns: {run_dir.name} (x100, {label})")
    summary = {
        "run": run_dir.name,
        "status": run.status,
        "wall_s": round(run.wall_s, 3),
        "tasks": len(run.task_ids),
        "models": run.models,
        "protocol": run.protocol.value,
        "left_out": {str(row["model"]): row["left out"] for row in board},
        "judges": run.manifest.get("judges"),
        "policies": run.manifest.get("policies"),
        "metric_backends": run.manifest.get("metric_backends"),
        "tasks_found": run.tasks_found,
        "skipped_records": len(run.manifest.get("skipped_records", [])),
        "generation": run.manifest.get("generation"),
        "sent_settings": sent,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    svgs = write_plots(out / "plots", breakdowns)
    if html:
        from iwr_bench.report.html import write_html

        write_html(out, run, board, breakdowns, svgs)
    if console is not None:
        print_rows(
            console,
            board,
            f"{run_dir.name}: leaderboard (x100, {label}, status {run.status})",
            skip=("tasks", "judged", "backends", "paper comparable", "cost usd"),
        )
        for name in ("interaction level", "visual level", "domain", "device"):
            rows = [r for r in breakdowns if r["breakdown"] == name]
            print_rows(console, rows, f"by {name} ({label})", skip=("breakdown", "backends"))
        print_rows(console, action_types(run), f"by action type ({label})", skip=("breakdown",))
        cost = sum(float(row["cost usd"]) for row in board)
        console.print(
            f"status {run.status}, wall time {run.wall_s:.1f} s over all sessions, cost ${cost:.4f}"
        )
        skipped = len(run.manifest.get("skipped_records", []))
        if skipped:
            console.print(skipped_line(skipped) + "; the means are over the tasks that were read")
        labels = sorted({str(row["backends"]) for row in board})
        console.print("backends: " + "; ".join(labels))
        for model, settings in sent.items():
            console.print(sent_line(model, settings), markup=False)
        for row in board:
            if row["left out"]:
                console.print(
                    f"{row['model']}: {row['left out']} task(s) without index.html left out of the means"
                )
        notes = sorted({str(row["HVS note"]) for row in board if row["HVS note"]})
        for note in notes:
            console.print(f"[bold red]{note}[/]")
        if any(not row["paper comparable"] for row in board):
            console.print(
                "[bold red]not paper-comparable[/]: substitute metric backends"
                " and/or no rubric judge (VFS = LVS)"
            )
        console.print(f"report written to {out}" + (f" (open {out / 'index.html'})" if html else ""))
    return out


def compare_runs(a_dir: Path, b_dir: Path, out: Path, console: Console | None = None) -> Path:
    """Per-model deltas B - A, with rows whose settings differ flagged as not comparable."""
    a, b = RunData.load(a_dir), RunData.load(b_dir)
    rows = compare(a, b)
    label = a.protocol_label + ("" if a.protocol_label == b.protocol_label else f" vs {b.protocol_label}")
    write_tables(out, "comparison", rows, f"{b_dir.name} - {a_dir.name} (x100, {label})")
    if console is not None:
        print_rows(console, rows, f"{b_dir.name} minus {a_dir.name} (x100, {label})")
        differ = differences(a, b)
        if differ:
            console.print(
                f"[bold red]not comparable[/]: the runs differ in {', '.join(differ)}; no deltas are shown"
            )
        console.print(f"comparison written to {out}")
    return out
