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

    ``stable`` mode screenshots every ``interval`` seconds until ``stable_frames`` consecutive shots
    have equal perceptual hashes (identical bytes short-cut the hash), up to ``max_wait``.
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
    equal = 1
    while True:
        if equal >= config.stable_frames:
            return time.perf_counter() - start, True, last_png
        if time.perf_counter() + config.interval > deadline:
            return time.perf_counter() - start, False, last_png
        await anyio.sleep(config.interval)
        png = await tab.screenshot()
        sig = last_sig if png == last_png else await _signature(png)
        equal = equal + 1 if sig == last_sig else 1
        last_png, last_sig = png, sig
