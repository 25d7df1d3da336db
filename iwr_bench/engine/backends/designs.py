"""The built-in backends, registered under the ``backend`` role: ``in-process`` and ``ray``.

Importing this module is cheap: each factory imports its backend's code when it is called, so
listing the backends (``iwr judges list``) or building ``in-process`` never imports Ray or the Ray
backend's module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iwr_bench.registry import register

if TYPE_CHECKING:
    from iwr_bench.engine.backends.inprocess import InProcessBackend
    from iwr_bench.engine.backends.ray_backend import RayBackend
    from iwr_bench.engine.config import RunConfig


@register("backend", "in-process")
def in_process() -> InProcessBackend:
    """Both moving stages in the engine's own process (the default; no Ray needed)."""
    from iwr_bench.engine.backends.inprocess import InProcessBackend

    return InProcessBackend()


@register("backend", "ray")
def ray(config: RunConfig) -> RayBackend:
    """Replay and metric workers as Ray actors (a local instance, or the cluster at ``[backend] address``)."""
    from iwr_bench.engine.backends.ray_backend import RayBackend

    return RayBackend(config.backend, config)
