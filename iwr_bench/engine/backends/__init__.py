"""Where the stages that move run: in this process (default) or on a Ray cluster.

:mod:`.base` holds the seam (:class:`~.base.StageBackend`), :mod:`.inprocess` today's code path,
:mod:`.ray_backend` the Ray one (imported only when a run asks for it, so Ray stays optional).
"""
