"""Time limits for tests that scale with how busy the machine is.

A test that bounds how long a page may take to load or act must not fail because the machine is
busy: CI runs the tests on 2 cores in several workers at once, beside Chromium. Such limits are
written as the seconds an idle machine needs, times :func:`slowdown`.
"""

from __future__ import annotations

import os


def slowdown() -> float:
    """How many times slower than an idle machine this one may run now (at least 1).

    The 1-minute load average per core, and at least the number of test workers per core
    (pytest-xdist's workers share the cores, and the load average lags behind them).
    """
    cores = len(os.sched_getaffinity(0))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1.0, os.getloadavg()[0] / cores, workers / cores)


def patient(seconds: float) -> float:
    """``seconds`` on an idle machine, stretched by :func:`slowdown`."""
    return seconds * slowdown()


def roomy(seconds: float) -> float:
    """A limit the test does not examine, only needs so that a hang ends: ``seconds`` on an idle
    machine, stretched by :func:`slowdown` and then four times more. The load average lags behind a
    sudden stall (a neighbouring worker swapping, or starting Ray), and a limit that fires then
    turns a passing test red; a longer one costs nothing while nothing hangs."""
    return 4 * patient(seconds)
