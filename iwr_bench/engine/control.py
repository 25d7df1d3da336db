"""Requests from outside the running engine: signals, and cancel files left in ``<run>/control``."""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path

import anyio

log = logging.getLogger(__name__)

CONTROL_DIR = "control"
"""Folder of a run where other processes leave requests for the running engine."""


def request_cancel(run_dir: Path, task_id: int, model: str) -> Path:
    """Ask the engine running in ``run_dir`` (another process) to cancel one (task, model) pair.

    The request is a small file the engine picks up within a second; it is ignored when that
    pair is not in progress.
    """
    folder = run_dir / CONTROL_DIR
    folder.mkdir(exist_ok=True)
    name = f"cancel-{time.time_ns()}-{task_id}-{model}.json"
    tmp = folder / f".{name}.tmp"
    tmp.write_text(json.dumps({"task_id": task_id, "model": model}))
    return tmp.replace(folder / name)


async def watch_control(run_dir: Path, cancel_job: Callable[[int, str], bool]) -> None:
    """Carry out the cancel requests dropped in ``<run>/control`` (see :func:`request_cancel`), forever."""
    folder = run_dir / CONTROL_DIR
    while True:
        for path in sorted(folder.glob("cancel-*.json")) if folder.is_dir() else []:
            try:
                request = json.loads(path.read_text())
                task_id, model = int(request["task_id"]), str(request["model"])
            except (OSError, ValueError, KeyError, TypeError):
                log.warning("ignoring a malformed control request %s", path.name)
                task_id, model = -1, ""
            if task_id >= 0 and not cancel_job(task_id, model):
                log.info("cancel request for %s/%s: not in progress", task_id, model)
            path.unlink(missing_ok=True)
        await anyio.sleep(0.5)


async def watch_signals(scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` at the first SIGINT or SIGTERM (the run stops resumably)."""
    try:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                scope.cancel()
                return
    except (NotImplementedError, ValueError, RuntimeError):  # not the main thread, or no signals here
        await anyio.sleep_forever()
