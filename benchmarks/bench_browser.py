"""Benchmark: click + settle + screenshot through our tools vs raw CDP on the same Chromium.

Runs the same 50-action sequence (clicks that change visible state, then settle, then a viewport
screenshot) through (a) :class:`iwr_bench.tools.tools.PageTools` and (b) bare CDP calls on the
same Chromium, and prints per-action latency (median, p90) and the ratio. With ``--pool`` it
compares the two pool isolation modes instead (a context per page vs a browser per slot: 12 pages
on 2 and 3 slots, each mode twice, time and peak Chromium memory).

Usage: ``python benchmarks/bench_browser.py [--actions 50] [--pool]``
"""

from __future__ import annotations

import argparse
import base64
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import psutil
from cdp_use import CDPClient

from iwr_bench.tools.models import Limits, PageSpec, SettleConfig, Viewport
from iwr_bench.tools.pool import PagePool, PoolConfig

PAGE = """<!doctype html><html><body style="margin:0;font:20px sans-serif">
<button id="b" style="position:absolute;left:40px;top:40px;width:160px;height:60px"
 onclick="n++; document.getElementById('c').textContent = 'count ' + n;
          document.body.style.background = 'hsl(' + (n * 37 % 360) + ',60%,85%)'">click</button>
<p id="c" style="position:absolute;top:120px;left:40px">count 0</p>
<script>let n = 0;</script></body></html>"""


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


async def _ours(pool: PagePool, page: Path, actions: int) -> list[float]:
    out: list[float] = []
    async with pool.page(PageSpec(page=str(page), viewport=Viewport(width=1280, height=720))) as tools:
        index = next(e.index for e in (await tools.observe()).elements if e.tag == "button")
        for _ in range(actions):
            start = time.perf_counter()
            await tools.click(index)
            await tools.screenshot()
            out.append(time.perf_counter() - start)
    return out


async def _raw(pool: PagePool, page: Path, actions: int, interval: float) -> list[float]:
    """The floor: three mouse events, two screenshots ``interval`` apart until equal, one final shot."""
    client = CDPClient(pool.browsers[0].cdp_url)  # a bare connection of its own
    await client.start()
    ctx = (await client.send.Target.createBrowserContext())["browserContextId"]
    url = f"file://{page}"  # bare CDP has no sandbox: load straight from disk
    target = (await client.send.Target.createTarget(params={"url": "about:blank", "browserContextId": ctx}))[
        "targetId"
    ]
    await anyio.sleep(0.2)
    sid = (await client.send.Target.attachToTarget(params={"targetId": target, "flatten": True}))["sessionId"]
    await client.send_raw("Runtime.runIfWaitingForDebugger", {}, sid)
    await client.send_raw(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": False},
        sid,
    )
    await client.send_raw("Page.navigate", {"url": url}, sid)
    await anyio.sleep(1.0)

    async def shot() -> bytes:
        reply = await client.send_raw("Page.captureScreenshot", {"format": "png"}, sid)
        return base64.b64decode(reply["data"])

    out: list[float] = []
    for _ in range(actions):
        start = time.perf_counter()
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            params = {"type": kind, "x": 120, "y": 70, "button": "left", "clickCount": 1}
            await client.send_raw("Input.dispatchMouseEvent", params, sid)
        last = await shot()
        while True:
            await anyio.sleep(interval)
            now = await shot()
            if now == last:
                break
            last = now
        await shot()
        out.append(time.perf_counter() - start)
    await client.send.Target.disposeBrowserContext(params={"browserContextId": ctx})
    await client.stop()
    return out


def _chromium_rss_mb() -> float:
    total = 0
    for proc in psutil.Process().children(recursive=True):
        try:
            if "chrom" in proc.name():
                total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


async def _pool_mode(isolation: str, page: Path, jobs: int, size: int) -> None:
    start = time.perf_counter()
    config = PoolConfig(size=size, isolation=isolation, settle=SettleConfig(), limits=Limits())  # type: ignore[arg-type]
    async with PagePool(config) as pool:
        started = time.perf_counter() - start
        peak = 0.0

        async def job() -> None:
            nonlocal peak
            async with pool.page(PageSpec(page=str(page))) as tools:
                await tools.observe()
                await tools.click(0)
                peak = max(peak, _chromium_rss_mb())

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(jobs):
                tg.start_soon(job)
        wall = time.perf_counter() - t0
    print(
        f"pool isolation={isolation:8s} size={size}: start {started:5.2f} s, {jobs} jobs "
        f"(open + settle + click + close) in {wall:5.2f} s = {wall / jobs * size:5.2f} s per job per slot, "
        f"peak Chromium RSS {peak:6.0f} MiB"
    )


async def main(actions: int, pool_bench: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "index.html"
        page.write_text(PAGE, encoding="utf-8")
        if pool_bench:  # the isolation modes alone, each twice, at 2 and 3 slots
            for size in (2, 3):
                for isolation in ("context", "browser", "context", "browser"):
                    await _pool_mode(isolation, page, jobs=12, size=size)
            return
        settle = SettleConfig(mode="stable", interval=0.05, stable_frames=2, max_wait=2.0)
        async with PagePool(PoolConfig(size=1, settle=settle)) as pool:
            await _ours(pool, page, 3)  # warm-up
            ours = await _ours(pool, page, actions)
            raw = await _raw(pool, page, actions, settle.interval)
        (om, op), (rm, rp) = _stats(ours), _stats(raw)
        mode = f"settle(stable, {settle.interval}s x{settle.stable_frames})"
        print(f"{actions} actions of click + {mode} + screenshot")
        print(f"  ours    median {om * 1000:7.1f} ms   p90 {op * 1000:7.1f} ms")
        print(f"  raw CDP median {rm * 1000:7.1f} ms   p90 {rp * 1000:7.1f} ms")
        print(f"  ratio   median {om / rm:5.2f}x      p90 {op / rp:5.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=50)
    parser.add_argument("--pool", action="store_true", help="compare the pool isolation modes instead")
    ns = parser.parse_args()
    anyio.run(main, ns.actions, ns.pool)
