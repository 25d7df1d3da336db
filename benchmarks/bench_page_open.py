"""Benchmark: what opening one small page costs Chromium, with and without the omnibox popup.

Every page opens in a browser context of its own, so in a window of its own. Chromium 156 builds an
omnibox popup for each window as a web page, in a renderer of its own; the sandbox turns that off
(``WebUIOmnibox*Popup`` in ``iwr_bench/tools/process.py``). This opens the same small page ``--pages``
times through :class:`~iwr_bench.tools.pool.PagePool` (load, settle, read the visible text, close)
with the launch flags as shipped and with those three features left on, each leg in a fresh process
so that Chromium's CPU time is its own, and prints wall time, Chromium's CPU time per page, the
renderers started per page, and the ratios.

Usage: ``python benchmarks/bench_page_open.py [--pages 20]``
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

POPUP_FEATURES = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "WebUIOmniboxFullPopup")
PAGE = "<!doctype html><html><body><h1>Notes</h1><p>Saved</p><button>Save</button></body></html>"


def _flags_with_popup() -> tuple[str, ...]:
    from iwr_bench.tools import process

    out = []
    for flag in process._LAUNCH_FLAGS:  # pyright: ignore[reportPrivateUsage]
        if flag.startswith("--disable-features="):
            names = [n for n in flag.split("=", 1)[1].split(",") if n not in POPUP_FEATURES]
            flag = "--disable-features=" + ",".join(names)
        out.append(flag)
    return tuple(out)


async def _leg(pages: int, popup: bool) -> dict[str, float]:
    from iwr_bench.tools import process
    from iwr_bench.tools.chromium import ChromiumBrowser
    from iwr_bench.tools.models import PageSpec, Viewport
    from iwr_bench.tools.pool import PagePool, PoolConfig

    if popup:
        process._LAUNCH_FLAGS = _flags_with_popup()  # pyright: ignore[reportPrivateUsage]
    folder = Path(tempfile.mkdtemp(prefix="bench-page-open-"))
    (folder / "index.html").write_text(PAGE, encoding="utf-8")
    renderers: set[int] = set()
    async with PagePool(PoolConfig(size=1)) as pool:
        browser = pool.browsers[0]
        assert isinstance(browser, ChromiumBrowser)
        browser_pid = browser.pid
        start = time.perf_counter()
        for _ in range(pages):
            spec = PageSpec(page=str(folder), viewport=Viewport(width=480, height=360))
            async with pool.page(spec) as tools:
                await tools.visible_text()
                renderers |= _renderers(browser_pid)
        wall = time.perf_counter() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall": wall, "chromium_cpu": used.ru_utime + used.ru_stime, "renderers": len(renderers)}


def _renderers(root: int) -> set[int]:
    from iwr_bench.tools.memory import _kind  # pyright: ignore[reportPrivateUsage]
    from iwr_bench.tools.process import descendants

    kinds: dict[int, str] = {}  # (the watchdog's own classification, so both count the same)
    return {pid for pid in descendants(root) if _kind(pid, kinds) == "renderer"}


def _run_leg(pages: int, popup: bool) -> dict[str, float]:
    args = [sys.executable, __file__, "--leg", "popup" if popup else "shipped", "--pages", str(pages)]
    done = subprocess.run(args, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--leg", choices=["shipped", "popup"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.leg:
        print(json.dumps(anyio.run(_leg, args.pages, args.leg == "popup")))
        return
    legs = {"with the popup": _run_leg(args.pages, True), "as shipped": _run_leg(args.pages, False)}
    print(f"{args.pages} pages, one at a time (load, settle, visible text, close)")
    print(f"{'':16}{'wall s':>8}{'s/page':>8}{'Chromium CPU s/page':>21}{'renderers/page':>16}")
    for name, leg in legs.items():
        n = args.pages
        cpu, wall = leg["chromium_cpu"] / n, leg["wall"]
        print(f"{name:16}{wall:8.1f}{wall / n:8.2f}{cpu:21.2f}{leg['renderers'] / n:16.1f}")
    before, after = legs["with the popup"], legs["as shipped"]
    print(
        f"ratio (with / without): wall {before['wall'] / after['wall']:.2f}x, "
        f"Chromium CPU {before['chromium_cpu'] / after['chromium_cpu']:.2f}x"
    )


if __name__ == "__main__":
    main()
