"""The pipeline's stages end to end: the built-in suite with a cold metric cache, then warm.

One invocation runs the built-in suite (baselines oracle, screenshot and blank; offline judges)
twice over the same, initially empty, metric cache: first cold (every OCR and embedding value
computed), then warm (every value cached, the metric models dropped first as in a new process).
Printed per run: wall time, each stage's busy time (wall time with some of that stage's work in
progress), the engine's overhead, each limit's idle time, the overlap ratio (sum of the stages'
busy times over the wall time: above 1 when stages ran at once), the wall time over the metric
stage's busy time (1.0: nothing ever waited on anything but the metrics), the metric models
loaded, when pairs were judged (the first, half of them, the longest wait between two: what
live means show), and the leaderboard (Final, x100), which must be the same for both runs.

Then the rerun: ``iwr run --resume`` of the finished cold run in a new process (every job done),
timed from process start to exit; it must start no browser and load no model.

Targets on a 2-core machine: cold wall <= 1.15x the metric stage's busy time, warm wall and rerun
< 5 s.

Usage: ``.venv/bin/python benchmarks/bench_stages.py [--tasks 101,102] [--pages N] [--cache-dir D]``
(the machine's load average is printed, since the numbers depend on it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.events import JobFinished, RunStarted
from iwr_bench.engine.run import Engine, RunOutcome, run_summary
from iwr_bench.metrics import models


def _run(
    only: list[int], pages: int | None, cache: Path, out: Path
) -> tuple[RunOutcome, dict[str, Any], list[float]]:
    """One run: its outcome, its leaderboard, and when (seconds after its start) each pair was judged."""
    limits: dict[str, Any] = {} if pages is None else {"browser_pages": pages}
    config = parse_run_config(
        {"only": only, "limits": limits, "metrics": {"cache": True, "cache_dir": str(cache)}}, "bench"
    )
    engine = Engine(config, out)
    engine.prepare()
    outcome = anyio.run(engine.run)
    if outcome.status != "completed":
        raise SystemExit(f"run in {out} ended {outcome.status}: {outcome.message}")
    assert engine.prepared is not None
    events = list(engine.prepared.store.iter_events())
    start = next(e.time for e in events if isinstance(e, RunStarted))
    judged = sorted(e.time - start for e in events if isinstance(e, JobFinished) and e.stage == "judge")
    return outcome, run_summary(engine.prepared.store)["models"], judged


def _report(label: str, o: RunOutcome, loads: int, board: dict[str, Any], judged: list[float]) -> None:
    busy = o.work_s
    overlap = sum(busy.values()) / o.wall_s if o.wall_s else 0.0
    metric = busy.get("metrics", 0.0)
    per_metric = f"{o.wall_s / metric:.2f}x" if metric else "n/a"
    print(f"{label}: wall {o.wall_s:.1f} s, {o.actions} actions, metric models loaded: {loads}")
    print(
        "  busy s: " + ", ".join(f"{k} {v:.1f}" for k, v in busy.items()) + f"; overhead {o.overhead_s:.1f}"
    )
    print("  idle s: " + ", ".join(f"{k} {v:.1f}" for k, v in o.limit_idle_s.items()))
    print(f"  overlap ratio (sum of busy / wall) {overlap:.2f}; wall / metrics busy {per_metric}")
    if judged:
        gaps = [b - a for a, b in zip([0.0, *judged], judged, strict=False)]
        print(
            f"  pairs judged: first after {judged[0]:.1f} s, half after {judged[len(judged) // 2]:.1f} s, "
            f"longest wait between two {max(gaps):.1f} s"
        )
    print("  Final: " + "  ".join(f"{m} {v['final']:.2f}" for m, v in board.items()), flush=True)


def main() -> None:
    """Run cold, then warm, and print both."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--tasks",
        "--only",
        dest="only",
        default="",
        help="comma-separated task ids (default: the whole suite)",
    )
    parser.add_argument("--pages", type=int, default=None, help="browser pages (default: adaptive)")
    parser.add_argument("--cache-dir", type=Path, help="metric cache (default: a fresh, empty one)")
    args = parser.parse_args()
    only = [int(x) for x in args.only.split(",") if x.strip()]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    suite = f"built-in suite{' ' + str(only) if only else ''}"
    print(f"stage benchmark: {suite}, cores {os.cpu_count()}, load {load}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cache = args.cache_dir or root / "cache"
        before = models.load_count()
        cold, cold_board, cold_judged = _run(only, args.pages, cache, root / "cold")
        _report("cold", cold, models.load_count() - before, cold_board, cold_judged)
        models.forget()  # as in a new process: a warm run must load nothing
        before = models.load_count()
        warm, warm_board, warm_judged = _run(only, args.pages, cache, root / "warm")
        _report("warm", warm, models.load_count() - before, warm_board, warm_judged)
        rerun = _rerun(root / "cold")
    same = {m: v["final"] for m, v in cold_board.items()} == {m: v["final"] for m, v in warm_board.items()}
    print(f"leaderboard identical cold/warm: {same}")
    metric = cold.work_s.get("metrics", 0.0)
    ratio = f"{cold.wall_s / metric:.2f}" if metric else "n/a"
    print(
        f"targets: cold wall / metrics busy <= 1.15 (got {ratio}); "
        f"warm wall < 5 s (got {warm.wall_s:.1f} s); rerun < 5 s (got {rerun:.1f} s)"
    )


def _rerun(run_dir: Path) -> float:
    """``iwr run --resume`` of a finished run in a new process: seconds from start to exit."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "iwr_bench", "run", "--resume", str(run_dir), "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"rerun of {run_dir} failed: {done.stderr.strip()}")
    print(f"rerun (finished run continued, new process): {seconds:.1f} s", flush=True)
    return seconds


if __name__ == "__main__":
    main()
