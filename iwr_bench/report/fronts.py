"""The summaries ``iwr judge`` and ``iwr generate`` print: per model, over this session's pages."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from iwr_bench.agents.generation import Budget, GenerationResult, totals
from iwr_bench.agents.judge.records import undetermined_rate
from iwr_bench.official_code import prompt_label
from iwr_bench.protocol import EvalProtocol
from iwr_bench.report.tables import hvs_note
from iwr_bench.scoring.evaluation import Evaluation
from iwr_bench.scoring.official import aggregate


def _undetermined(rows: list[Evaluation]) -> str:
    """The share of a model's judged assertions the judge could not decide."""
    rate = undetermined_rate(
        a.assertion.verdict if a.assertion else None for r in rows for a in r.replay.actions
    )
    return "-" if rate is None else f"{100 * rate:.0f}%"


def print_judge_summary(
    results: list[Evaluation], models: list[str], protocol: EvalProtocol, official_code: str = ""
) -> None:
    """Per model (x100): tasks, IFS, LVS, HVS, VFS, Final, pages missing or left out, undetermined rate."""
    prompts = f" ({prompt_label(official_code)})" if protocol is EvalProtocol.official else ""
    table = Table(title=f"iwr judge (x100, protocol {protocol.value}{prompts})")
    columns = (
        "model",
        "tasks",
        "IFS",
        "IFS micro",
        "LVS",
        "HVS",
        "VFS",
        "Final",
        "no page",
        "left out",
        "undet.",
    )
    for col in columns:
        table.add_column(col, justify="left" if col == "model" else "right", overflow="fold")
    notes: set[str] = set()
    for model in models:
        rows = [r for r in results if r.model == model]
        missing = [r.replay.failure == "no_page" for r in rows]
        s, left_out, hvs_missing = aggregate(
            [(r.score, m) for r, m in zip(rows, missing, strict=True)], protocol
        )
        if hvs_missing:
            notes.add(hvs_note(protocol))
        if s is None:
            table.add_row(model, "0", *["-"] * 6, str(sum(missing)), str(left_out), _undetermined(rows))
            continue
        table.add_row(
            model,
            str(s.tasks),
            f"{s.ifs:.2f}",
            f"{s.ifs_micro:.2f}",
            f"{s.lvs:.2f}",
            "n/a" if s.hvs is None else f"{s.hvs:.2f}",
            f"{s.vfs:.2f}",
            f"{s.final:.2f}",
            str(sum(missing)),
            str(left_out),
            _undetermined(rows),
        )
    console = Console(width=160)
    console.print(table)
    backends = {b.label for r in results for b in r.backends}
    console.print("backends: " + ", ".join(sorted(backends)))
    if protocol == EvalProtocol.official and any(r.replay.failure == "no_page" for r in results):
        console.print("tasks without index.html are left out of the means (official protocol)")
    for note in sorted(notes):
        console.print(note)


def print_generation_summary(results: list[GenerationResult], budget: Budget, out: Path) -> None:
    """One line per model plus the run total."""
    spent = 0.0
    for t in totals(results).values():
        fails = ", ".join(f"{k} {v}" for k, v in sorted(t.failures.items()))
        price = f"${t.cost_usd:.4f}" + (f" (+{t.unpriced} unpriced)" if t.unpriced else "")
        print(
            f"{t.model}: {t.tasks} task(s), {t.ok} ok, {t.failed} failed{f' ({fails})' if fails else ''}, "
            f"{t.cache_hits} cached, {t.input_tokens}+{t.output_tokens} tokens, {price}"
        )
        spent += t.cost_usd
    cap = f" of ${budget.limit_usd:.4f} budget" if budget.limit_usd is not None else ""
    print(f"total: {len(results)} generation(s), ${spent:.4f} spent{cap}; pages under {out}")
