"""Benchmark: the gaming corpus against the baselines, on the whole built-in suite, in one run.

Writes every cheat of :mod:`iwr_bench.suites.gaming` for every task of the built-in suite, then
runs ``iwr run`` with the ``oracle`` and ``screenshot`` baselines and each cheat as a model (the
default offline judges and metrics). Prints each model's Final, IFS and VFS, each cheat's margin
over the screenshot baseline and whether it stays under the bound (screenshot + 5 Final). With
``--protocol official`` the same run under the official rules, with the pages each model's score
rests on steps no person could do (``unseen``).

Usage: ``.venv/bin/python benchmarks/bench_gaming.py [--only 101,103] [--protocol official]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

from iwr_bench.cli import main
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.suites.build import SAMPLE
from iwr_bench.suites.gaming import write_corpus

MARGIN = 5.0


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated task ids (default: every task)")
    parser.add_argument("--protocol", default="default", choices=("default", "official"))
    args = parser.parse_args()
    tasks = load_tasks(SAMPLE).tasks
    if args.only:
        keep = {int(t) for t in args.only.split(",")}
        tasks = [t for t in tasks if t.id in keep]
    with tempfile.TemporaryDirectory() as tmp:
        folders = write_corpus(tasks, Path(tmp) / "corpus")
        argv = ["run", "--out", str(Path(tmp) / "run"), "--json", "--protocol", args.protocol]
        argv += ["--only", ",".join(str(t.id) for t in tasks), "--model", "oracle", "--model", "screenshot"]
        for folder in folders.values():
            argv += ["--model", f"pages:{folder}"]
        started = time.perf_counter()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(argv)
        wall = time.perf_counter() - started
        models = json.loads(out.getvalue())["models"]
    names = {f"pages:{folder}": cheat for cheat, folder in folders.items()}
    floor = models["screenshot"]["final"]
    print(f"{len(tasks)} tasks, protocol {args.protocol}, {wall:.0f} s, exit {code}")
    print(f"{'model':28s} {'Final':>7s} {'IFS':>7s} {'VFS':>7s} {'margin':>7s} {'unseen':>6s}  bound")
    worst = None
    for key, m in models.items():
        name = next((cheat for page, cheat in names.items() if key.endswith(_slug(page))), key)
        margin = m["final"] - floor
        verdict = ""
        if name in folders:
            verdict = "ok" if margin < MARGIN else "ABOVE"
            worst = margin if worst is None else max(worst, margin)
        print(
            f"{name:28s} {m['final']:7.2f} {m['ifs']:7.2f} {m['vfs']:7.2f} {margin:+7.2f} "
            f"{m.get('unseen_pages', 0):6d}  {verdict}"
        )
    if worst is not None:
        print(f"largest margin of a cheat over the screenshot baseline: {worst:+.2f} (bound +{MARGIN:g})")


def _slug(model: str) -> str:
    """The tail of a model's folder name, as the run names it (non-word characters become _)."""
    return "".join(c if c.isalnum() or c in "-." else "_" for c in model.rsplit("/", 1)[-1])


if __name__ == "__main__":
    run()
