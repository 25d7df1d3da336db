"""A memory bound per page that covers everything its renderer allocates.

V8's heap flag does not cover ArrayBuffers, canvas pixels, WASM memory or the heaps of workers, so
the bound is put on the renderer process itself: a watchdog reads the resident set size of every
renderer of one Chromium ten times a second (looking for new renderers twice a second) and kills
a renderer above the limit. Chromium then reports the page's target as crashed;
:meth:`MemoryWatchdog.claim` gives the browser the reason to record ("the renderer used X MiB >
limit"). Every tab runs in its own browser context, and Chromium never shares a renderer between
contexts, so killing a renderer ends one page only.
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from contextlib import suppress
from pathlib import Path

import anyio
import anyio.to_thread

from iwr_bench.tools.process import descendants

_PAGE = os.sysconf("SC_PAGE_SIZE")
_MIB = 1024 * 1024


def _is_renderer(pid: int, cache: dict[int, bool]) -> bool:
    known = cache.get(pid)
    if known is None:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        known = b"--type=renderer" in cmdline
        cache[pid] = known
    return known


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


class MemoryWatchdog:
    """Kills renderers of one browser whose resident memory exceeds ``limit_mb``."""

    def __init__(self, browser_pid: int, limit_mb: int, interval: float = 0.1, rescan_every: int = 5) -> None:
        self.browser_pid = browser_pid
        self.limit_mb = limit_mb
        self.interval = interval
        self.rescan_every = max(1, rescan_every)
        """Walk the process tree for new renderers every this many passes (RSS is read every pass)."""
        self._passes = 0
        self._renderers: list[int] = []
        self.kills: deque[tuple[float, str]] = deque(maxlen=64)
        """Recent kills not yet matched to a crashed page: (monotonic time, reason)."""
        self.peak_mb = 0.0
        """Largest renderer resident size seen, in MiB."""
        self._types: dict[int, bool] = {}

    def scan(self) -> list[str]:
        """One pass: kill over-limit renderers; returns the reasons of this pass's kills."""
        limit = self.limit_mb * _MIB
        reasons: list[str] = []
        self._passes += 1
        if self._passes % self.rescan_every == 1 or self.rescan_every == 1:
            pids = descendants(self.browser_pid)  # the costly part: walk the process tree now and then
            self._renderers = [pid for pid in pids if _is_renderer(pid, self._types)]
            if len(self._types) > 4 * len(pids) + 64:
                alive = set(pids)
                self._types = {p: t for p, t in self._types.items() if p in alive}
        for pid in self._renderers:
            rss = _rss(pid)
            self.peak_mb = max(self.peak_mb, rss / _MIB)
            if rss > limit:
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    reason = f"the renderer used {rss / _MIB:.0f} MiB > limit {self.limit_mb} MiB"
                    reasons.append(reason)
                    self.kills.append((time.monotonic(), reason))
        return reasons

    def claim(self, within: float = 15.0) -> str | None:
        """The reason of the oldest recent kill not yet claimed by a crashed page, if any."""
        now = time.monotonic()
        while self.kills:
            at, reason = self.kills.popleft()
            if now - at <= within:
                return reason
        return None

    async def run(self) -> None:
        """Scan every ``interval`` seconds until cancelled."""
        while True:
            await anyio.to_thread.run_sync(self.scan)
            await anyio.sleep(self.interval)
