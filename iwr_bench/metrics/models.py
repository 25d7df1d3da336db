"""Metric models shared by the whole process: each is loaded once, lazily, when first needed.

A metric asks for its model only when it has a value to compute (not in the cache, not a
pixel-identical pair), so a run whose values are all cached loads none. :func:`load_count`
counts the loads of this process (tests and benchmarks read it); :func:`forget` drops the
loaded models so the next need loads them again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_models: dict[Hashable, Any] = {}
_loads: list[Hashable] = []


def shared(key: Hashable, load: Callable[[], T]) -> T:
    """The model ``key`` names, loading it with ``load`` the first time (thread-safe).

    A failed load raises and is tried again at the next need.
    """
    with _lock:
        if key not in _models:
            _models[key] = load()
            _loads.append(key)
        return _models[key]


def load_count() -> int:
    """How many models this process has loaded."""
    with _lock:
        return len(_loads)


def loaded() -> list[Hashable]:
    """Keys of the models this process loaded, in load order."""
    with _lock:
        return list(_loads)


def forget() -> None:
    """Drop every loaded model (the next need loads it again); the load count stays."""
    with _lock:
        _models.clear()
