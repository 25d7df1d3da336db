"""OCR on the CPU: one reader on every core (threads), or one reader per core (processes)?

The metric stage can spend its cores two ways: one EasyOCR reader whose detector computes with
N threads (what the engine does: ``metric_workers = 1``, the runtime's own thread pool), or N
worker processes, each a reader computing with one thread. This benchmark reads the same distinct
suite checkpoints each way, in one invocation, and prints images per second and the ratio.

Each mode runs in fresh processes (a model loaded once per process, not timed: the engine loads
it once per run), after one warm-up image per process. The text read must be the same in every
mode (it is printed as a check).

Usage: ``.venv/bin/python benchmarks/bench_metric_workers.py [--images 12] [--cores N]``
(default cores: all this process may use; the machine's load average is printed, since the
numbers depend on it).
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from iwr_bench.suites.build import SAMPLE


def _images(count: int) -> list[Path]:
    """Distinct suite checkpoints, spread over the tasks."""
    found = sorted((SAMPLE / "data").glob("*/checkpoints/*.png"))
    step = max(1, len(found) // count)
    return found[::step][:count]


def _read(paths: list[str], threads: int) -> tuple[float, list[str]]:
    """In a fresh process: load the reader, warm it up, then time reading ``paths``."""
    os.environ["IWR_METRIC_THREADS"] = str(threads)
    from PIL import Image

    from iwr_bench.metrics.ocr import EasyOcr

    reader = EasyOcr(device="cpu")
    images = [Image.open(p).convert("RGB") for p in paths]
    reader.read(images[0])  # load and warm up
    start = time.perf_counter()
    texts = [reader.read(img) for img in images]
    return time.perf_counter() - start, texts


def main() -> None:
    """Read the images each way and print the rates."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--images", type=int, default=12, help="distinct checkpoints to read (default 12)")
    parser.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)), help="cores to use")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    paths = [str(p) for p in _images(args.images)]
    n = args.cores
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"metric workers benchmark: {len(paths)} images, {n} cores, load {load}", flush=True)
    rates: dict[str, float] = {}
    texts: dict[str, list[str]] = {}
    modes = {
        f"1 process x {n} threads": [(paths, n)],
        f"{n} processes x 1 thread": [(paths[i::n], 1) for i in range(n)],
        "1 process x 1 thread": [(paths, 1)],
    }
    for name, jobs in modes.items():
        with ProcessPoolExecutor(len(jobs)) as pool:
            started = time.perf_counter()
            done = list(pool.map(_read, *zip(*jobs, strict=True)))
            wall = time.perf_counter() - started
        busy = max(seconds for seconds, _ in done)  # the slowest process, load excluded
        read: dict[str, str] = {}
        for (chunk, _), (_, out) in zip(jobs, done, strict=True):
            read.update(zip(chunk, out, strict=True))
        texts[name] = [read[p] for p in paths]
        rates[name] = len(paths) / busy
        print(
            f"  {name}: {busy:.1f} s reading ({rates[name]:.2f} images/s; {wall:.1f} s with loading)",
            flush=True,
        )
    first, second, single = rates.values()
    same = len({tuple(t) for t in texts.values()}) == 1
    print(f"threads / processes: {first / second:.2f}x; threads / one core: {first / single:.2f}x")
    print(f"text read identical in every mode: {same}")
    print(f"faster on this machine: {'threads' if first >= second else 'processes'}")


if __name__ == "__main__":
    main()
