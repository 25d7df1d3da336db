"""Waiting for a page to stop changing after it loads or is acted on."""

from __future__ import annotations

import time
from typing import Literal

import anyio
import anyio.to_thread

from iwr_bench.metrics.hashing import phash_hex
from iwr_bench.tools.browser import Tab
from iwr_bench.tools.models import SettleConfig

SettleAfter = Literal["load", "action", "scroll"]


async def _signature(png: bytes) -> str:
    return await anyio.to_thread.run_sync(phash_hex, png)


async def settle(tab: Tab, config: SettleConfig, after: SettleAfter) -> tuple[float, bool, bytes | None]:
    """Wait for ``tab`` to settle; return (seconds waited, settled, last screenshot if one was taken).

    ``stable`` mode screenshots every ``interval`` seconds. The page is settled once its screenshots
    have stayed byte-identical for ``quiet`` seconds, or, past ``tolerant_after`` seconds, once
    ``stable_frames`` consecutive shots have equal perceptual hashes (a page that never stops
    moving); it gives up at ``max_wait``. Rendering is repeatable (see
    :data:`~iwr_bench.tools.pool.STEADY_RASTER_FLAGS`), so unchanged content gives identical bytes.
    ``fixed`` mode sleeps the published wait for ``after``.
    """
    start = time.perf_counter()
    if config.mode == "fixed":
        delay = {"load": config.after_load, "action": config.after_action, "scroll": config.after_scroll}[
            after
        ]
        await anyio.sleep(delay)
        return time.perf_counter() - start, True, None
    deadline = start + config.max_wait
    last_png = await tab.screenshot()
    last_sig = await _signature(last_png)
    still_since = time.perf_counter()  # when the current run of identical screenshots began
    equal = 1
    while True:
        now = time.perf_counter()
        if now - still_since >= config.quiet:
            return now - start, True, last_png
        if now - start >= config.tolerant_after and equal >= config.stable_frames:
            return now - start, True, last_png
        if now + config.interval > deadline:
            return now - start, False, last_png
        await anyio.sleep(config.interval)
        png = await tab.screenshot()
        if png != last_png:
            still_since = time.perf_counter()
            sig = await _signature(png)
            equal = equal + 1 if sig == last_sig else 1
            last_png, last_sig = png, sig
        else:
            equal += 1
