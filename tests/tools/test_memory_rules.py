"""The watchdog's shared-growth rule for pages of one browser, on real processes standing in."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iwr_bench.tools import memory
from iwr_bench.tools.memory import MemoryWatchdog
from iwr_bench.tools.process import descendants

MIB = 1024 * 1024


@pytest.fixture
def stand_ins() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two processes that play the renderers of two pages (they are what gets killed)."""
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait()


def _watchdog(pages: int) -> MemoryWatchdog:
    # the shared "GPU process" is this test process; its whole size counts as growth over a
    # baseline of 0 and no allowance, so the growth is far over 2 pages x 16 MiB
    dog = MemoryWatchdog(
        os.getpid(), limit_mb=16, open_pages=lambda: pages, gpu_slack_mb=0, browser_slack_mb=0
    )
    dog._shared = {"gpu": [os.getpid()], "other": []}  # pyright: ignore[reportPrivateUsage]
    dog.baseline_mb = {"gpu": 0.0, "other": 0.0}
    return dog


def test_in_a_shared_browser_the_largest_page_goes_first_then_the_next_after_a_grace(
    stand_ins: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "SHARED_GRACE_S", 0.3)
    small, large = stand_ins
    dog = _watchdog(pages=2)
    sizes = {small.pid: 100 * MIB, large.pid: 300 * MIB}
    reasons: list[str] = []
    dog._check_shared(2, sizes, reasons)  # pyright: ignore[reportPrivateUsage]
    assert len(reasons) == 1 and "largest renderer (300 MiB) was stopped first" in reasons[0]
    assert large.wait(timeout=5) == -9 and small.poll() is None
    dog._check_shared(2, {small.pid: 100 * MIB}, reasons)  # pyright: ignore[reportPrivateUsage]
    assert len(reasons) == 1 and small.poll() is None  # within the grace: nothing more
    time.sleep(0.4)
    dog._check_shared(2, {small.pid: 100 * MIB}, reasons)  # pyright: ignore[reportPrivateUsage]
    assert len(reasons) == 2 and small.wait(timeout=5) == -9  # still over after the grace: the next


def test_one_page_alone_is_charged_the_whole_growth(stand_ins: list[subprocess.Popen[bytes]]) -> None:
    page = stand_ins[0]
    dog = _watchdog(pages=1)
    reasons: list[str] = []
    dog._check_shared(1, {page.pid: 10 * MIB}, reasons)  # pyright: ignore[reportPrivateUsage]
    assert len(reasons) == 1 and "in the browser's shared processes" in reasons[0]
    assert page.wait(timeout=5) == -9


def test_after_a_renderer_is_stopped_the_page_left_is_not_charged_its_leftovers(
    stand_ins: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hog stopped for its own renderer's size leaves GPU memory the shared processes free only
    # after a moment; the page beside it, now alone, is not charged with it in the meantime.
    monkeypatch.setattr(memory, "SHARED_GRACE_S", 0.3)
    page, hog = stand_ins
    dog = _watchdog(pages=1)
    reasons: list[str] = []
    dog._kill(hog.pid, "the renderer used 2000 MiB > limit 16 MiB", reasons)  # pyright: ignore[reportPrivateUsage]
    assert hog.wait(timeout=5) == -9
    dog._check_shared(1, {page.pid: 10 * MIB}, reasons)  # pyright: ignore[reportPrivateUsage]
    assert len(reasons) == 1 and page.poll() is None  # within the grace: the leftovers are not its own
    time.sleep(0.4)
    dog._check_shared(1, {page.pid: 10 * MIB}, reasons)  # pyright: ignore[reportPrivateUsage]
    assert len(reasons) == 2 and page.wait(timeout=5) == -9  # growth that stays is charged again


_CHILD = """import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", "--type=" + "renderer"])
"""
"""A stand-in renderer: it reads as a zygote (as a renderer just forked from one does) until a file
appears, then becomes a renderer (its code spells the flag in two parts, or the zygote's command
line, which holds the code, would read as a renderer's)."""
_PARENT = "import subprocess, sys; subprocess.run([sys.executable, '-c', *sys.argv[1:], '--type=zygote'])"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_renderer_first_seen_under_its_zygotes_name_is_watched_once_it_has_its_own(
    tmp_path: Path,
) -> None:
    go = tmp_path / "go"
    browser = subprocess.Popen([sys.executable, "-c", _PARENT, _CHILD, str(go)])
    try:
        _wait_for(lambda: any(b"--type=zygote" in _cmdline(p) for p in descendants(browser.pid)), "the fork")
        (child,) = descendants(browser.pid)
        dog = MemoryWatchdog(browser.pid, limit_mb=1, rescan_every=1)
        assert dog.scan() == []  # not a renderer yet
        go.touch()
        _wait_for(lambda: b"--type=renderer" in _cmdline(child), "the renderer's own name")
        reasons = dog.scan()
        assert len(reasons) == 1 and "> limit 1 MiB" in reasons[0]
        _wait_for(lambda: _cmdline(child) == b"", "the kill")
    finally:
        browser.kill()
        browser.wait()
