"""Ray's overhead on one machine: the same subset in-process, then on a local Ray instance.

One invocation judges the same tasks with the same baselines (oracle and blank by default,
offline judges) twice, each with a fresh metric cache: first with the in-process backend, then
with ``[backend] kind = "ray"`` (a local Ray instance started and stopped by the run). Printed per
run: wall time, actions replayed, each stage's busy time, the engine's overhead, replay seconds
per action, and the leaderboard (Final x100, which must be equal). Then Ray's overhead ratio
(Ray wall / in-process wall, and the same for the replay stage's busy time).

The Ray run's wall time includes starting Ray and its workers (a cluster that is already up, with
``--address``, pays that once, not per run); the start-up is printed apart.

Usage: ``.venv/bin/python benchmarks/bench_ray.py [--only 101,113] [--pages N] [--models oracle,blank]
[--metrics cheap|default]`` (``cheap``: phash and EfficientNet-Lite0, computed for real; ``default``:
EasyOCR and the DINO fallback, minutes per run on 2 cores). The load average is printed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.run import Engine, RunOutcome, run_summary


def _run(kind: str, args: argparse.Namespace, out: Path) -> tuple[RunOutcome, dict[str, Any], float]:
    metrics: dict[str, Any] = {"cache": True, "cache_dir": str(out.parent / f"cache-{kind}")}
    if args.metrics == "cheap":
        metrics |= {"ocr_design": "phash", "image_design": "effnet-lite0"}
    data: dict[str, Any] = {
        "only": [int(x) for x in args.only.split(",")],
        "models": [{"name": m} for m in args.models.split(",")],
        "limits": {"browser_pages": args.pages},
        "metrics": metrics,
        "backend": {"kind": kind},
    }
    engine = Engine(parse_run_config(data, "bench"), out)
    started = time.perf_counter()
    engine.prepare()  # the Ray backend starts its local instance here
    connect = time.perf_counter() - started
    outcome = anyio.run(engine.run)
    if outcome.status != "completed":
        raise SystemExit(f"{kind} run in {out} ended {outcome.status}: {outcome.message}")
    assert engine.prepared is not None
    return outcome, run_summary(engine.prepared.store)["models"], connect


def _report(label: str, o: RunOutcome, board: dict[str, Any], connect: float) -> None:
    busy = o.work_s
    per_action = busy.get("replay", 0.0) / o.actions if o.actions else 0.0
    print(f"{label}: wall {o.wall_s:.1f} s (+ {connect:.1f} s set-up), {o.actions} actions")
    print(
        "  busy s: " + ", ".join(f"{k} {v:.1f}" for k, v in busy.items()) + f"; overhead {o.overhead_s:.1f}"
    )
    print(f"  replay busy per action: {per_action:.3f} s")
    print("  Final: " + "  ".join(f"{m} {v['final']:.2f}" for m, v in board.items()), flush=True)


def main() -> None:
    """Run the subset in-process, then on local Ray, and print both and the overhead."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="101,113")
    parser.add_argument("--models", default="oracle,blank")
    parser.add_argument("--pages", type=int, default=2)
    parser.add_argument("--metrics", choices=["cheap", "default"], default="cheap")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; tasks {args.only}")
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        local, board_l, connect_l = _run("in-process", args, Path(tmp) / "in-process")
        _report("in-process", local, board_l, connect_l)
        remote, board_r, connect_r = _run("ray", args, Path(tmp) / "ray")
        _report("ray (local)", remote, board_r, connect_r)
    same = {m: round(v["final"], 2) for m, v in board_l.items()} == {
        m: round(v["final"], 2) for m, v in board_r.items()
    }
    replay_l, replay_r = local.work_s.get("replay", 0.0), remote.work_s.get("replay", 0.0)
    print(f"Ray overhead: wall {remote.wall_s / local.wall_s:.2f}x", end="")
    print(f", with set-up {(remote.wall_s + connect_r) / (local.wall_s + connect_l):.2f}x", end="")
    print(f", replay busy {replay_r / replay_l:.2f}x" if replay_l else "", end="")
    print(f"; leaderboards {'equal' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
