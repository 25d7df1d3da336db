"""Where the stages that move run: in this process (default), on a Ray cluster, or on a backend a
plugin registers.

:mod:`.base` holds the seam (:class:`~.base.StageBackend`) and :func:`~.base.make_backend`, which
builds the design ``[backend] kind`` names under the registry's ``backend`` role; :mod:`.designs`
registers the built-in ones: :mod:`.inprocess` today's code path, :mod:`.ray_backend` the Ray one
(imported only when a run asks for it, so Ray stays optional).
"""
