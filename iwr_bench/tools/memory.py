"""A memory bound per page that covers everything it makes Chromium allocate.

V8's heap flag does not cover ArrayBuffers, canvas pixels, WASM memory or the heaps of workers, so
the bound is put on the renderer process itself: a watchdog reads the resident set size of every
renderer of one Chromium ten times a second (looking for new renderers twice a second) and kills
a renderer above the limit. Chromium then reports the page's target as crashed;
:meth:`MemoryWatchdog.claim` gives the browser the reason to record ("the renderer used X MiB >
limit"). Every tab runs in its own browser context, and Chromium never shares a renderer between
contexts, so killing a renderer ends one page only.

A page also makes the processes it shares with other pages grow: WebGL textures live in the GPU
process, and IndexedDB, Cache Storage, the origin-private file system and Blobs of an
off-the-record context live in the browser process (measured: 1.5 GiB of textures took the GPU
process from 85 to 1,852 MiB; 1.5 GiB in Cache Storage took the browser process from 223 to 1,764
MiB). That growth, measured per group (the GPU process; the others) against the group's size
while no page was open, less an allowance for what any page brings (``gpu_slack_mb``,
``browser_slack_mb``), is charged to the pages open at the time:

* with one page open in the browser (always so with ``PoolConfig.isolation="browser"``, a browser
  per slot), the page's renderer plus that growth must stay within the limit, or its renderers are
  killed: the page fails as ``page_crashed`` and closing its context gives the memory back;
* with several pages open in one browser (``isolation="context"``, ``PoolConfig``'s default;
  runs give each slot a browser) the growth cannot
  be told apart, so a renderer is killed only when it exceeds the limit times the number of open
  pages: the largest one first (a hog's textures and Blobs pass through its own renderer), and,
  after ``SHARED_GRACE_S`` for the shared processes to free what it held, the next largest only if
  the growth is still over the bound. The machine is protected; the neighbours very likely are,
  but only a browser per slot guarantees it.

Stored data is measured per page, whatever the isolation: the browser caps each page's origin at
its bound by quota and adds the origin's usage to the page's renderer
(``ChromiumBrowser._watch_storage``), using :meth:`MemoryWatchdog.renderer_mb`.
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import anyio
import anyio.to_thread

from iwr_bench.tools.process import descendants

_PAGE = os.sysconf("SC_PAGE_SIZE")
SHARED_GRACE_S = 3.0
"""After stopping a page of a shared browser, seconds before shared growth may stop another."""
_MIB = 1024 * 1024


def _kind(pid: int, cache: dict[int, str]) -> str:
    """``renderer``, ``gpu`` or ``other`` (the browser process, the zygotes, utility services).
    Chromium rewrites its command line as one string, so the flag is looked for anywhere in it.

    A renderer is forked from a zygote and carries the zygote's command line until it sets its
    own: a process that still reads ``--type=zygote`` is looked at again on the next walk, not
    remembered (remembered, a renderer caught in that moment on a loaded machine was never
    watched, and a memory hog ran unchecked)."""
    known = cache.get(pid)
    if known is None:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return "gone"
        known = "other"
        if b"--type=renderer" in cmdline:
            known = "renderer"
        elif b"--type=gpu-process" in cmdline:
            known = "gpu"
        elif b"--type=zygote" in cmdline:
            return known
        cache[pid] = known
    return known


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


class MemoryWatchdog:
    """Kills renderers of one browser whose resident memory exceeds ``limit_mb``."""

    def __init__(
        self,
        browser_pid: int,
        limit_mb: int,
        interval: float = 0.1,
        rescan_every: int = 5,
        open_pages: Callable[[], int] | None = None,
        gpu_slack_mb: int = 256,
        browser_slack_mb: int = 1024,
    ) -> None:
        self.browser_pid = browser_pid
        self.open_pages = open_pages
        """How many pages the browser has open now; None: shared processes are not watched."""
        self.slack_mb = {"gpu": gpu_slack_mb, "other": browser_slack_mb}
        """Growth of the GPU process, and of the other shared processes, that is not charged to
        pages: what any page brings. Measured: up to 250 MiB for the GPU and browser processes
        together on ordinary pages under the tests' load (a 50,000-button page alone: 48 MiB GPU,
        92 MiB others), and over 1.5 GiB with the hostile-page tests' two pages open in one
        browser, cause not pinned down. A hog is stopped past that."""
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
        self._sizes_mb: list[float] = []
        self._types: dict[int, str] = {}
        self._shared: dict[str, list[int]] = {"gpu": [], "other": []}
        self.baseline_mb: dict[str, float] = {}
        """Each shared group's resident size when last seen with no page open, in MiB."""
        self._shared_grace_until = 0.0
        self.shared_peak_mb: dict[str, float] = {"gpu": 0.0, "other": 0.0}
        """Largest growth of each shared group over its baseline seen, in MiB."""

    def scan(self) -> list[str]:
        """One pass: kill over-limit renderers; returns the reasons of this pass's kills."""
        limit = self.limit_mb * _MIB
        reasons: list[str] = []
        self._passes += 1
        pages = self.open_pages() if self.open_pages is not None else None
        if self._passes % self.rescan_every == 1 or self.rescan_every == 1:
            pids = descendants(self.browser_pid)  # the costly part: walk the process tree now and then
            kinds = {pid: _kind(pid, self._types) for pid in pids}
            self._renderers = [pid for pid, kind in kinds.items() if kind == "renderer"]
            self._shared = {
                "gpu": [pid for pid, kind in kinds.items() if kind == "gpu"],
                "other": [self.browser_pid, *(pid for pid, kind in kinds.items() if kind == "other")],
            }
            if len(self._types) > 4 * len(pids) + 64:
                alive = set(pids)
                self._types = {p: t for p, t in self._types.items() if p in alive}
        sizes = {pid: _rss(pid) for pid in self._renderers}
        self._sizes_mb = [rss / _MIB for rss in sizes.values() if rss > 0]
        for pid, rss in sizes.items():
            self.peak_mb = max(self.peak_mb, rss / _MIB)
            if rss > limit:
                why = f"the renderer used {rss / _MIB:.0f} MiB > limit {self.limit_mb} MiB"
                self._kill(pid, why, reasons)
        if pages is not None:
            self._check_shared(pages, sizes, reasons)
        return reasons

    def renderer_mb(self, *, alone: bool) -> float:
        """What one page's renderer holds, in MiB, as of the last pass: the largest renderer when the
        page is alone in its browser, else the smallest (which renderer is whose is not known)."""
        if not self._sizes_mb:
            return 0.0
        return max(self._sizes_mb) if alone else min(self._sizes_mb)

    def _check_shared(self, pages: int, renderers: dict[int, int], reasons: list[str]) -> None:
        sizes = {group: sum(_rss(pid) for pid in pids) / _MIB for group, pids in self._shared.items()}
        if pages == 0 or not self.baseline_mb:
            self.baseline_mb = sizes
            return
        over = 0.0  # growth beyond each group's allowance
        for group, size in sizes.items():
            growth = size - self.baseline_mb.get(group, size)
            self.shared_peak_mb[group] = max(self.shared_peak_mb[group], growth)
            over += max(0.0, growth - self.slack_mb[group])
        alive = {pid: rss for pid, rss in renderers.items() if rss > 0}
        if not alive or over <= 0 or time.monotonic() < self._shared_grace_until:
            return  # (in the grace after a stop, the shared processes are still freeing its memory)
        if pages == 1:
            own = max(alive.values()) / _MIB  # not the sum: renderers share most of their pages
            if own + over <= self.limit_mb:
                return
            why = (
                f"the page used {own + over:.0f} MiB > limit {self.limit_mb} MiB: {own:.0f} MiB in its "
                f"renderer and {over:.0f} MiB in the browser's shared processes beyond what any page "
                "adds (GPU memory such as WebGL textures, or stored data: IndexedDB, Cache Storage, "
                "origin-private files, Blobs)"
            )
        else:
            if over <= self.limit_mb * pages:
                return
            # Growth in one browser cannot be told apart between its pages: stop the page with the
            # largest renderer (a hog's uploads pass through its own renderer first), give the
            # shared processes a moment to free what it held, and stop the next only if the
            # growth stays over the bound.
            pid, rss = max(alive.items(), key=lambda item: item[1])
            why = (
                f"the browser's shared processes grew by {over:.0f} MiB beyond what pages add > "
                f"{pages} open pages x limit {self.limit_mb} MiB (GPU memory or Blobs); pages sharing "
                f"one browser cannot be told apart, so the one with the largest renderer "
                f"({rss / _MIB:.0f} MiB) was stopped first (isolation = browser charges each page its own)"
            )
            self._kill(pid, why, reasons)  # (and waits SHARED_GRACE_S before the next)
            return
        for pid in alive:
            self._kill(pid, why, reasons)

    def _kill(self, pid: int, reason: str, reasons: list[str]) -> None:
        # Whatever the rule, the shared processes need a moment to free what the stopped page held
        # (a WebGL hog's textures): until then their growth is not charged to the pages left,
        # which would otherwise pay for it (seen: a hog stopped for its own renderer's size, then
        # the page beside it charged with 698 MiB of the hog's GPU memory).
        self._shared_grace_until = time.monotonic() + SHARED_GRACE_S
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            reasons.append(reason)
            self.kills.append((time.monotonic(), reason))

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
