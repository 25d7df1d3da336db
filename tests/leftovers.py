"""Finding processes a test left behind, by a marker in their environment."""

from __future__ import annotations

import os
import time
from pathlib import Path


def processes_with_env(marker: str) -> list[str]:
    """Live processes whose environment holds ``marker`` (every Chromium process inherits TMPDIR)."""
    found: list[str] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            env = (proc / "environ").read_bytes()
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if marker.encode() in env and stat.rsplit(")", 1)[1].split()[0] != "Z":
            found.append(f"{proc.name}: {stat.split(')')[0]})")
    return found


def survivors(marker: str, wait: float = 10.0) -> list[str]:
    """Processes still holding ``marker`` after up to ``wait`` seconds (dying ones get time to go)."""
    deadline = time.monotonic() + wait
    while (left := processes_with_env(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
