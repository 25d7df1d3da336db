"""Metric models shared by the whole process: each is loaded once, lazily, when first needed.

A metric asks for its model only when it has a value to compute (not in the cache, not a
pixel-identical pair), so a run whose values are all cached loads none. :func:`load_count`
counts the loads of this process (tests and benchmarks read it); :func:`forget` drops the
loaded models so the next need loads them again. :func:`on_loading` tells a listener when a
load starts and ends (the engine shows "loading metric models" while one runs).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_models: dict[Hashable, Any] = {}
_loads: list[Hashable] = []
_key_locks: dict[Hashable, threading.Lock] = {}
_threads_applied = 0
"""The thread count torch was last told (0: not yet)."""
_all_cores = False
_listeners: list[Callable[[Hashable, bool], None]] = []


def on_loading(listener: Callable[[Hashable, bool], None]) -> Callable[[], None]:
    """Call ``listener(key, started)`` when a model load starts (True) and ends (False), from the
    loading thread; returns a function that removes it."""
    with _lock:
        _listeners.append(listener)

    def remove() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return remove


def _tell(key: Hashable, started: bool) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(key, started)


def _configured_threads() -> int | None:
    configured = os.environ.get("IWR_METRIC_THREADS", "")
    return int(configured) if configured.isdigit() and int(configured) > 0 else None


def metric_threads() -> int:
    """CPU threads the metric models compute with: ``$IWR_METRIC_THREADS``, else half the cores,
    or every core once :func:`browsers_done` said the browsers have nothing left to replay.

    The other half is left to the browser pages, which replay while metrics run: on 2 cores a
    model on both starves Chromium (its judge calls then miss their deadlines).
    """
    configured = _configured_threads()
    if configured is not None:
        return configured
    cores = len(os.sched_getaffinity(0))
    return cores if _all_cores else max(1, cores // 2)


def browsers_done(done: bool = True) -> None:
    """The run's replays are over (or, with False, start again): the models may use every core.

    On 2 cores the metrics stage outlasts the replays by far (OCR takes seconds a screenshot), so
    its tail would otherwise leave a core idle. The change applies at the next model use.
    """
    global _all_cores
    _all_cores = done


def sync_threads() -> None:
    """Apply :func:`metric_threads` if it changed since torch was last told (call before computing).

    Cheap when nothing changed; the metric models call it on the thread that computes. It compares
    with torch's own thread count, which other code in the process (a library, another test) may
    have changed since.
    """
    global _threads_applied
    wanted = metric_threads()
    loaded_torch = sys.modules.get("torch")
    # torch's own count, once torch is imported: other code in the process may have set it
    current = loaded_torch.get_num_threads() if loaded_torch is not None else _threads_applied
    if wanted == current:
        _threads_applied = wanted
        return
    with _lock:
        import torch

        if torch.get_num_threads() != wanted:
            torch.set_num_threads(wanted)
        _threads_applied = wanted


def shared(key: Hashable, load: Callable[[], T]) -> T:
    """The model ``key`` names, loading it with ``load`` the first time (thread-safe).

    A failed load raises and is tried again at the next need. The first load also sets how many
    CPU threads the models compute with (:func:`metric_threads`).
    """
    with _lock:
        if key in _models:
            return _models[key]
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:  # one load per model; other models load (and are used) meanwhile
        with _lock:
            if key in _models:
                return _models[key]
        _tell(key, True)
        try:
            sync_threads()  # the first time, this imports torch: part of the wait
            model = load()
        finally:
            _tell(key, False)
        with _lock:
            _models[key] = model
            _loads.append(key)
        return model


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
