"""``iwr report`` on a results tree written by the official scripts (``<id>/<model>/eval.json``).

The official evaluation writes one ``eval.json`` per (task, model) and reports each model as a
Markdown table: a row per task with IFS, OCR, DINO, LFS, HFS, VFS and Final (x100, two decimals)
and an ``avg`` row, the plain mean over the tasks that have an ``eval.json``. This module reads
such a tree (or the ``eval.json`` files of our own runs, which carry the same fields), computes
those numbers with the official formulas (protocol.md section 6), writes the same per-model tables
plus a leaderboard across models, and, given the dataset, breakdowns by level and domain. It also
puts a tree beside one of our runs in one table.

Files it cannot read are named on the console and left out; a task folder that is not a number,
or an ``eval.json`` of ours that marks a missing page (``no_page``), is not a scored task.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.errors import UserError
from iwr_bench.report.render import print_rows, write_tables
from iwr_bench.report.tables import Row
from iwr_bench.scoring.formulas import IFS_WEIGHT, VFS_WEIGHT

COLUMNS = ("IFS", "OCR", "DINO", "LFS", "HFS", "VFS", "Final")
"""The official per-model table's score columns, in its order."""

EVAL = "eval.json"
Numbers = dict[str, float]
"""One task's numbers, by column (fractions)."""


def is_official_tree(path: Path) -> bool:
    """Whether ``path`` is a results tree (``<id>/<model>/eval.json``) rather than a run folder."""
    if not path.is_dir() or (path / "run.sqlite").exists():
        return False
    return any(p.parent.parent.name.isdigit() for p in path.glob(f"*/*/{EVAL}"))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def official_numbers(evaluation: dict[str, Any]) -> dict[str, float]:
    """One task's numbers (fractions) from the official fields of its ``eval.json``: IFS = success
    over total steps; each score list cut to its first success + 1 entries; OCR, DINO and HFS their
    means (0 for an empty list, so a run without the rubric judge has HFS 0, as officially);
    LFS = (OCR + DINO) / 2; VFS = (LFS + HFS) / 2; Final = 0.7 IFS + 0.3 VFS.

    Raises:
        ValueError: a field missing or of the wrong kind.
    """
    total, success = int(evaluation["total_step"]), int(evaluation["success_step"])
    keep = success + 1
    ocr = _mean([float(v) for v in evaluation["all_ocr_scores"][:keep]])
    dino = _mean([float(v) for v in evaluation["all_dino_scores"][:keep]])
    hfs = _mean([float(v) for v in evaluation.get("all_mllm_scores", [])[:keep]])
    ifs = success / total if total > 0 else 0.0
    lfs = (ocr + dino) / 2
    vfs = 0.5 * lfs + 0.5 * hfs
    final = IFS_WEIGHT * ifs + VFS_WEIGHT * vfs
    return {"IFS": ifs, "OCR": ocr, "DINO": dino, "LFS": lfs, "HFS": hfs, "VFS": vfs, "Final": final}


@dataclass
class OfficialTree:
    """The scored tasks of a results tree, by model folder."""

    root: Path
    scores: dict[str, dict[int, dict[str, float]]] = field(
        default_factory=dict[str, dict[int, dict[str, float]]]
    )
    """Model folder -> task id -> that task's numbers (fractions)."""
    problems: list[str] = field(default_factory=list[str])
    """Files that could not be read, one line each."""
    missing_pages: dict[str, int] = field(default_factory=dict[str, int])
    """Model folder -> our ``eval.json`` files that mark a missing page (left out, as officially)."""

    @classmethod
    def read(cls, root: Path) -> OfficialTree:
        """Read every ``<id>/<model>/eval.json`` under ``root``.

        Raises:
            UserError: when ``root`` holds none.
        """
        tree = cls(root)
        found = sorted(root.glob(f"*/*/{EVAL}"))
        for path in found:
            task, model = path.parent.parent.name, path.parent.name
            if not task.isdigit():
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                if data.get("no_page"):
                    tree.missing_pages[model] = tree.missing_pages.get(model, 0) + 1
                    continue
                numbers = official_numbers(data)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                tree.problems.append(f"{path.relative_to(root)}: {type(exc).__name__}: {exc}")
                continue
            tree.scores.setdefault(model, {})[int(task)] = numbers
        if not tree.scores and not tree.problems:
            raise UserError(f"{root} holds no <id>/<model>/{EVAL} (neither a results tree nor a run folder)")
        return tree

    def model_rows(self, model: str) -> list[Row]:
        """The official per-model table: a row per task (x100, in task order), then ``avg``."""
        tasks = self.scores.get(model, {})
        rows: list[Row] = [
            {"task": str(tid), **{c: round(100 * tasks[tid][c], 2) for c in COLUMNS}} for tid in sorted(tasks)
        ]
        if tasks:
            rows.append({"task": "avg", **self.means(model)})
        return rows

    def means(self, model: str, task_ids: Sequence[int] | None = None) -> Row:
        """Plain means over the model's scored tasks (or those of ``task_ids`` it has), x100."""
        tasks = self.scores.get(model, {})
        chosen = [tasks[t] for t in (task_ids if task_ids is not None else tasks) if t in tasks]
        return {c: round(100 * _mean([n[c] for n in chosen]), 2) for c in COLUMNS}

    def leaderboard(self) -> list[Row]:
        """One row per model (its ``avg`` row), best Final first."""
        rows: list[Row] = [
            {
                "model": model,
                "tasks": len(self.scores[model]),
                **self.means(model),
                "pages missing": self.missing_pages.get(model, 0),
            }
            for model in self.scores
        ]
        rows.sort(key=lambda row: -float(row["Final"]))
        return rows

    def breakdowns(self, tasks: Sequence[Task]) -> list[Row]:
        """Means by interaction level, visual level and domain, for each model (needs the dataset)."""
        groups: dict[tuple[str, str], list[int]] = {}
        for task in tasks:
            c = task.record.classification
            for name, value in (
                ("interaction level", c.interaction_complexity),
                ("visual level", c.visual_complexity),
                ("domain", c.domain),
            ):
                groups.setdefault((name, value or "(none)"), []).append(task.id)
        rows: list[Row] = []
        for (name, value), ids in sorted(groups.items()):
            for model in self.scores:
                have = [t for t in ids if t in self.scores[model]]
                if have:
                    means = self.means(model, have)
                    rows.append(
                        {"breakdown": name, "group": value, "model": model, "tasks": len(have)}
                        | {c: means[c] for c in ("IFS", "VFS", "Final")}
                    )
        return rows


def build_official_report(
    root: Path, out: Path, console: Console | None = None, *, tasks: Path | None = None
) -> Path:
    """Write ``<model>_metrics.md`` per model (the official table), ``leaderboard.*`` and, with the
    dataset, ``breakdowns.*`` into ``out``; print them. Returns ``out``."""
    tree = OfficialTree.read(root)
    out.mkdir(parents=True, exist_ok=True)
    for model in tree.scores:
        write_tables(
            out, f"{model.replace('/', '__')}_metrics", tree.model_rows(model), f"model: {model} result"
        )
    board = tree.leaderboard()
    title = f"Leaderboard: {root.name} (official results tree, x100, the official formulas)"
    write_tables(out, "leaderboard", board, title)
    breakdowns: list[Row] = []
    if tasks is not None:
        breakdowns = tree.breakdowns(load_tasks(tasks).tasks)
        write_tables(out, "breakdowns", breakdowns, f"Breakdowns: {root.name} (x100)")
    if console is not None:
        for model in tree.scores:
            print_rows(console, tree.model_rows(model), f"model: {model} result (x100)")
        print_rows(console, board, title)
        for name in ("interaction level", "visual level", "domain"):
            rows = [r for r in breakdowns if r["breakdown"] == name]
            if rows:
                print_rows(console, rows, f"by {name} (x100)", skip=("breakdown",))
        for line in tree.problems:
            console.print(f"[yellow]left out[/]: {line}", markup=True, highlight=False)
        console.print(f"report written to {out}")
    return out


def _key(model: str) -> str:
    return model.lower().replace("/", "__")


def compare_with_tree(
    tree_root: Path, board: Sequence[Row], run_name: str, out: Path, console: Console | None = None
) -> Path:
    """One table: each model's numbers in the results tree beside those of one of our runs
    (``board``: that run's leaderboard), matched by folder name without case, and run - tree."""
    tree = OfficialTree.read(tree_root)
    ours = {_key(str(row["model"])): row for row in board}
    theirs = {_key(m): m for m in tree.scores}
    rows: list[Row] = []
    for key in sorted(set(ours) | set(theirs)):
        a = tree.means(theirs[key]) if key in theirs else None
        b = ours.get(key)
        row: Row = {"model": theirs.get(key) or str(b["model"] if b else key)}
        for col, our_col in (("IFS", "IFS"), ("VFS", "VFS"), ("Final", "Final")):
            left = a[col] if a else None
            right = b.get(our_col) if b else None
            row[f"{col} tree"] = left
            row[f"{col} {run_name}"] = right
            row[f"{col} delta"] = (
                round(float(right) - float(left), 2) if left is not None and right is not None else None
            )
        rows.append(row)
    title = f"{run_name} beside {tree_root.name} (x100; delta = run - tree)"
    write_tables(out, "comparison", rows, title)
    if console is not None:
        print_rows(console, rows, title)
        console.print(f"comparison written to {out}")
    return out
