"""Bar charts of the breakdowns (matplotlib, no display needed), as PNG files and inline SVG."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: render to files only
import matplotlib.pyplot as plt

from iwr_bench.report.tables import Row


def grouped_bars(rows: Sequence[Row], value: str, title: str, ylabel: str) -> tuple[bytes, str]:
    """Bars of ``value`` per group (x) and model (colour); returns (PNG bytes, SVG text)."""
    groups = list(dict.fromkeys(str(r["group"]) for r in rows))
    models = list(dict.fromkeys(str(r["model"]) for r in rows))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(groups) * max(1, len(models)) / 2 + 2), 3.2), dpi=100)
    width = 0.8 / max(1, len(models))
    for i, model in enumerate(models):
        heights = [
            next((float(r[value] or 0.0) for r in rows if r["group"] == g and r["model"] == model), 0.0)
            for g in groups
        ]
        xs = [g + (i - (len(models) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, heights, width=width * 0.95, label=model)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, 100)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if models:
        ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    png, svg = io.BytesIO(), io.StringIO()
    fig.savefig(png, format="png")
    fig.savefig(svg, format="svg")
    plt.close(fig)
    text = re.sub(r"<metadata>.*?</metadata>", "", svg.getvalue(), flags=re.S)  # dates, licence links
    return png.getvalue(), text[text.index("<svg") :]  # drop the XML prologue for inlining


def write_plots(out: Path, breakdowns: Sequence[Row]) -> dict[str, str]:
    """One PNG per breakdown in ``out``; returns breakdown name -> inline SVG."""
    out.mkdir(parents=True, exist_ok=True)
    names = list(dict.fromkeys(str(r["breakdown"]) for r in breakdowns))
    svgs: dict[str, str] = {}
    for name in names:
        rows = [r for r in breakdowns if r["breakdown"] == name]
        if name == "action type":
            png, svg = grouped_bars(rows, "success rate", "Actions that succeeded, by type", "% of actions")
        else:
            png, svg = grouped_bars(rows, "Final", f"Final by {name}", "Final (x100)")
        (out / f"{name.replace(' ', '_')}.png").write_bytes(png)
        svgs[name] = svg
    return svgs
