"""Chromium dies with the process that holds it, however that process is ended."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_corpus import ORDINARY, chromium_leftovers

from iwr_bench.tools.process import descendants, sweep_stale_roots

pytestmark = [pytest.mark.browser]

HOLDER = """
import sys, anyio
from iwr_bench.tools.models import PageSpec
from iwr_bench.tools.pool import PagePool, PoolConfig

async def main() -> None:
    async with PagePool(PoolConfig(size=1)) as pool, pool.page(PageSpec(page=sys.argv[1])):
        browser = pool.browsers[0]
        print(browser.pid, browser.root, flush=True)
        await anyio.sleep(120)

anyio.run(main)
"""


def _wait_until(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_no_chromium_survives_its_holder(sig: signal.Signals, tmp_path: Path) -> None:
    page = tmp_path / "index.html"
    page.write_text(ORDINARY)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(page)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stderr is not None
            line = holder.stdout.readline().decode()
            assert line, holder.stderr.read().decode()
            pid_text, root = line.split(maxsplit=1)
            pid, root = int(pid_text), root.strip()
            tree = [pid, *descendants(pid)]
            assert len(tree) >= 3  # browser, renderer, helpers
            holder.send_signal(sig)
            holder.wait(timeout=30)
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
    assert _wait_until(lambda: chromium_leftovers(tree, (root,)) == [], 10), chromium_leftovers(tree, (root,))
    if sig == signal.SIGINT:
        assert not Path(root).exists()  # the holder unwound and cleaned up itself
    else:
        sweep_stale_roots()  # what the next browser start does with folders of dead holders
        assert not Path(root).exists()
