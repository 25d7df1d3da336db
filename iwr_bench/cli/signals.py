"""How ``iwr run`` treats SIGTERM and SIGINT around a run.

Before and during a run SIGTERM behaves like Ctrl-C (the run stops resumably); once the run has
completed and is stored, either signal ends the process with status 0, so a supervisor that
stops a finished run does not record a failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Generator
from pathlib import Path
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt() -> Generator[None]:
    """SIGTERM raises KeyboardInterrupt while ``iwr run`` prepares (the engine watches both while it runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is _interrupt:
            signal.signal(signal.SIGTERM, previous)


def _exit_quietly(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(0)


def _is_cli_process() -> bool:
    """Whether this process is the ``iwr`` command (not a host that called ``main`` in-process)."""
    main = sys.modules.get("__main__")
    return getattr(main, "__package__", None) == "iwr_bench" or Path(sys.argv[0]).name == "iwr"


def exit_zero_on_stop() -> None:
    """The run completed and is stored: from now on SIGTERM and SIGINT end the process with 0."""
    if threading.current_thread() is threading.main_thread() and _is_cli_process():
        handler: Callable[[int, FrameType | None], None] = _exit_quietly
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
