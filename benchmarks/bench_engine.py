"""The engine end to end: the offline suite with 1, 2 and 4 browser pages, in one invocation.

Each configuration is a fresh ``iwr run`` of the built-in suite (baselines oracle, screenshot and
blank; offline judges) in its own run folder. A first, unmeasured run warms the metric cache,
so the measured runs get OCR and embedding values of already-seen screenshots from the cache
and what they measure is replay concurrency and the engine itself; the warm-up's own figures are
printed too (every metric computed). Printed per configuration: wall time, actions replayed per
second, the engine's overhead (wall time during which no browser, model or metric work was in
progress) as a percentage, and the speed-up over one page.

Usage: ``.venv/bin/python benchmarks/bench_engine.py [--only 101,102] [--pages 1,2,4] [--cache-dir D]``
(``--cache-dir ~/.cache/iwr-bench`` reuses what ``make demo`` computed, so the warm-up is short).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import anyio

from iwr_bench.engine.config import RunConfig, parse_run_config
from iwr_bench.engine.run import Engine, RunOutcome, run_summary


def _config(only: list[int], pages: int, cache_dir: Path) -> RunConfig:
    return parse_run_config(
        {
            "only": only,
            "limits": {"browser_pages": pages},
            "metrics": {"cache": True, "cache_dir": str(cache_dir)},
        },
        "bench",
    )


def _run(config: RunConfig, out: Path) -> tuple[RunOutcome, str]:
    engine = Engine(config, out)
    engine.prepare()
    outcome = anyio.run(engine.run)
    if outcome.status != "completed":
        raise SystemExit(f"run in {out} ended {outcome.status}: {outcome.message}")
    assert engine.prepared is not None
    models = run_summary(engine.prepared.store)["models"]
    finals = "  ".join(f"{m} {v['final']:.2f}" for m, v in models.items())
    return outcome, f"Final: {finals}"


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
    parser.add_argument(
        "--cache-dir", type=Path, help="metric cache to warm and use (default: a fresh temporary one)"
    )
    args = parser.parse_args()
    only = [int(x) for x in args.only.split(",") if x.strip()]
    counts = [int(x) for x in args.pages.split(",") if x.strip()]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"engine benchmark: built-in suite{' ' + str(only) if only else ''}, cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cache = args.cache_dir or root / "cache"
        warm, finals = _run(_config(only, max(counts), cache), root / "warm-up")
        print(_line(f"warm-up ({max(counts)} p)", warm, None) + "  [fills the metric cache]")
        print(f"{'':<16} {finals}")
        base: float | None = None
        for n in counts:
            outcome, finals = _run(_config(only, n, cache), root / f"pages-{n}")
            print(_line(f"{n} page{'s' if n > 1 else ''}", outcome, base), flush=True)
            print(f"{'':<16} {finals}", flush=True)
            base = outcome.wall_s if base is None else base


if __name__ == "__main__":
    main()
