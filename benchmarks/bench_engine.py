"""The engine end to end: the offline suite with 1, 2 and 4 browser pages, in one invocation.

Each configuration is a fresh ``iwr run`` of the built-in suite (baselines oracle, screenshot and
blank; offline judges) in its own run folder. A first, unmeasured run warms the metric cache,
so the measured runs get OCR and embedding values of already-seen screenshots from the cache
and what they measure is replay concurrency and the engine itself; the warm-up's own figures are
printed too (every metric computed). Printed per configuration: wall time, actions replayed per
second, the engine's overhead (wall time during which no browser, model or metric work was in
progress) as a percentage, and the speed-up over one page.

Usage: ``.venv/bin/python benchmarks/bench_engine.py [--only 101,102] [--pages 1,2,4]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import anyio

from iwr_bench.engine.config import RunConfig, parse_run_config
from iwr_bench.engine.run import Engine, RunOutcome


def _config(only: list[int], pages: int, cache_dir: Path) -> RunConfig:
    return parse_run_config(
        {
            "only": only,
            "limits": {"browser_pages": pages},
            "metrics": {"cache": True, "cache_dir": str(cache_dir)},
        },
        "bench",
    )


def _run(config: RunConfig, out: Path) -> RunOutcome:
    engine = Engine(config, out)
    engine.prepare()
    outcome = anyio.run(engine.run)
    if outcome.status != "completed":
        raise SystemExit(f"run in {out} ended {outcome.status}: {outcome.message}")
    return outcome


def _line(label: str, o: RunOutcome, base: float | None) -> str:
    rate = o.actions / o.wall_s if o.wall_s else 0.0
    overhead = 100 * o.overhead_s / o.wall_s if o.wall_s else 0.0
    speedup = "" if base is None else f"  speed-up x{base / o.wall_s:.2f}"
    work = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(o.work_s.items()))
    return (
        f"{label:<16} wall {o.wall_s:7.1f} s  {o.actions:4d} actions  {rate:5.2f} actions/s  "
        f"overhead {overhead:4.1f}%{speedup}  (work summed over jobs: {work})"
    )


def main() -> None:
    """Run the configurations and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated task ids (default: the whole suite)")
    parser.add_argument("--pages", default="1,2,4", help="browser-page counts to measure")
    args = parser.parse_args()
    only = [int(x) for x in args.only.split(",") if x.strip()]
    counts = [int(x) for x in args.pages.split(",") if x.strip()]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"engine benchmark: built-in suite{' ' + str(only) if only else ''}, cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        warm = _run(_config(only, max(counts), root / "cache"), root / "warm-up")
        print(_line(f"warm-up ({max(counts)} p)", warm, None) + "  [metrics computed]")
        base: float | None = None
        for n in counts:
            outcome = _run(_config(only, n, root / "cache"), root / f"pages-{n}")
            print(_line(f"{n} page{'s' if n > 1 else ''}", outcome, base), flush=True)
            base = outcome.wall_s if base is None else base


if __name__ == "__main__":
    main()
