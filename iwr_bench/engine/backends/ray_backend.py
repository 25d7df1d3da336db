"""The Ray backend: replay workers (a browser page each) and metric workers (a GPU each when the
cluster has them) as Ray actors; the store, events, judges, limits and reports stay on the driver.

The driver is the one scheduler: its named limits (browser pages, metric workers, judge and
model calls) bound the whole cluster, since every page and every metric batch is handed out
from here. A worker that dies loses only the pairs it was working on; each is tried again on a
fresh worker, up to ``[backend] tries`` times, and then fails as ``worker_lost``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from iwr_bench.agents.judge.records import Replay
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.backends.base import ExecutorFactory, FreeSlots, Timer, WorkerLost
from iwr_bench.engine.backends.settings import BackendSettings
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.deadlines import Background
from iwr_bench.engine.limits import Limits
from iwr_bench.engine.setup import build_metrics
from iwr_bench.errors import UserError
from iwr_bench.protocol import EvalProtocol
from iwr_bench.scoring.evaluation import Measured, VisualMetrics, measure
from iwr_bench.tools.pool import PagePool, PoolConfig

log = logging.getLogger(__name__)

NAMESPACE = "iwr-bench"
"""Ray namespace of the run's actors (``replay-<n>``, ``metrics-<n>``)."""


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise UserError(
            "the Ray backend needs Ray: pip install 'iwr-bench[ray]' (or use --backend in-process)"
        ) from exc
    return ray


def package_root() -> str:
    """The folder holding this ``iwr_bench`` package (local workers import the same code)."""
    return str(Path(__file__).resolve().parents[3])


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail in one line, at once, when a ``HOST:PORT`` address has nobody listening (Ray itself
    would retry for minutes)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return  # "auto", a ray:// client address: Ray resolves and reports those itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise UserError(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc} "
            "(start it with `ray start --head`, or leave out --address for a local instance)"
        ) from exc


class RayBackend:
    """Replays and metric batches on Ray actors of a local instance or a cluster."""

    name = "ray"

    def __init__(self, settings: BackendSettings, cfg: RunConfig) -> None:
        self.settings = settings
        self.cfg = cfg
        self._started = False
        self._resources: dict[str, float] = {}
        self._nodes = 0
        self._replay: list[Any] = []
        self._slots = FreeSlots()
        self._workers: Any = None
        self._pool: PoolConfig | None = None
        self._shipper: Any = None
        self._serial = 0
        self.lost = 0
        """Replays that lost their worker (each was tried again)."""
        self.metrics_lost = 0
        """Metric batches that lost their worker (each was tried again on a fresh one)."""

    # -- the cluster ---------------------------------------------------------------------------

    def connect(self) -> None:
        """Join ``[backend] address``, or start a local instance sized to this machine.

        Raises:
            UserError: Ray is missing, or the address cannot be reached.
        """
        ray = _ray()
        env = {"PYTHONPATH": os.pathsep.join(p for p in (package_root(), os.environ.get("PYTHONPATH")) if p)}
        runtime_env = {"env_vars": env}
        address = self.settings.address
        if address:
            _check_reachable(address)
        try:
            if address:
                ray.init(address=address, namespace=NAMESPACE, log_to_driver=False)
            else:
                ray.init(
                    num_cpus=os.cpu_count() or 1,
                    include_dashboard=False,
                    namespace=NAMESPACE,
                    runtime_env=runtime_env,
                    log_to_driver=False,
                    _temp_dir="/tmp/ray",
                )
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as exc:
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise UserError(f"cannot reach {where}: {str(exc).splitlines()[0]}") from exc
        self._started = True
        self._resources = {k: float(v) for k, v in ray.cluster_resources().items()}
        self._nodes = sum(1 for node in ray.nodes() if node.get("Alive"))  # several may share one IP

    def describe(self) -> dict[str, Any]:
        """Kind, Ray version, address and the cluster's resources (CPUs, GPUs, memory, nodes)."""
        ray = _ray()
        shown = {k: v for k, v in self._resources.items() if not k.startswith("node:")}
        return {
            "kind": self.name,
            "ray_version": str(ray.__version__),
            "address": self.settings.address or "local",
            "nodes": self._nodes,
            "cluster_resources": shown,
            "replay_workers": self.cfg.limits.browser_pages,
            "metric_workers": self.cfg.limits.metric_workers,
            "metrics_on_gpu": self._gpus() > 0,
        }

    def _gpus(self) -> float:
        return self._resources.get("GPU", 0.0)

    # -- metrics -------------------------------------------------------------------------------

    def _metric_designs(self) -> dict[str, tuple[str, dict[str, Any]]]:
        m = self.cfg.metrics
        context: dict[str, Any] = {  # as engine.setup.build_metrics builds them
            "device": m.device,
            "cache_dir": (m.cache_dir or "") if m.cache else None,
            "model": m.dino,
            "fallback": "effnet-lite0" if m.dino_fallback else None,
        }
        return {"ocr": (m.ocr_design, context), "dino": (m.image_design, context)}

    def metrics(self, cfg: RunConfig, limits: Limits, timer: Timer, background: Background) -> VisualMetrics:
        """The run's metrics as in-process (cache, batching, limit, clock on the driver), each
        design's computation moved to the metric workers."""
        from iwr_bench.engine.backends.ray_remote import RemoteMetric
        from iwr_bench.metrics.pair import PairMetric, text_reader

        def remote(role: str, design: PairMetric) -> PairMetric:
            reads = text_reader(design) is not None
            return RemoteMetric(design.backend, role, _LateWorkers(self), reads_text=reads)

        return build_metrics(cfg, limits, timer, background, place=remote)

    # -- workers -------------------------------------------------------------------------------

    def _start_replay(self) -> Any:
        ray = _ray()
        from iwr_bench.engine.backends.ray_workers import ReplayWorker

        assert self._pool is not None
        self._serial += 1
        options: dict[str, Any] = {"num_cpus": self.settings.replay_cpus, "max_concurrency": 16}
        options["name"] = f"replay-{self._serial}"
        if self._resources.get("chromium"):
            options["resources"] = {"chromium": 1}  # nodes started with --resources='{"chromium": N}'
        cache = "/tmp/iwr-ray-pages"
        return ray.remote(ReplayWorker).options(**options).remote(self._pool, cache, ray.get)

    def _start_metrics(self) -> Any:
        ray = _ray()
        from iwr_bench.engine.backends.ray_workers import MetricWorker

        self._serial += 1
        options: dict[str, Any] = {"num_cpus": 1, "max_concurrency": 4, "name": f"metrics-{self._serial}"}
        if self._gpus() >= 1:
            options["num_gpus"] = 1
        worker = ray.remote(MetricWorker).options(**options)
        return worker.remote(self._metric_designs(), list(self.cfg.plugins))

    def _wait_ready(self, actors: list[Any]) -> None:
        ray = _ray()
        refs = [a.ready.remote() for a in actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.settings.ready_timeout_s)
        if len(ready) < len(refs):
            raise UserError(
                f"the Ray cluster started {len(ready)} of {len(refs)} workers in "
                f"{self.settings.ready_timeout_s:g} s: it lacks the CPUs/GPUs they claim "
                f"({self._resources.get('CPU', 0):g} CPUs); lower [limits] browser_pages or metric_workers"
            )
        ray.get(ready)  # a worker that failed to start raises here

    def _start_all(self) -> None:
        from iwr_bench.engine.backends.ray_remote import MetricWorkers, Shipper

        self._shipper = Shipper()
        self._replay = [self._start_replay() for _ in range(self.cfg.limits.browser_pages)]
        metric = [self._start_metrics() for _ in range(self.cfg.limits.metric_workers)]
        self._wait_ready([*self._replay, *metric])
        self._slots.reset(len(self._replay))
        self._workers = MetricWorkers(metric, self._start_metrics, self.settings.tries)

    def _stop_all(self) -> None:
        ray = _ray()
        for actor in self._replay:
            try:
                ray.get(actor.shutdown.remote(), timeout=30)
            except (ray.exceptions.RayError, TimeoutError) as exc:
                log.debug("replay worker did not shut down cleanly: %s", exc)
            ray.kill(actor)
        for actor in self._workers.actors if self._workers is not None else []:
            ray.kill(actor)
        if self._workers is not None:
            self.metrics_lost += self._workers.lost
        self._replay, self._workers = [], None
        if self._started:
            # stops the local instance this run started; on a cluster it only disconnects the driver
            ray.shutdown()
            self._started = False

    @asynccontextmanager
    async def open(self, pool: PoolConfig) -> AsyncGenerator[None]:
        """Start one replay worker per browser page and the metric workers; stop them at the end."""
        self._pool = pool.model_copy(update={"size": 1})
        try:
            await anyio.to_thread.run_sync(self._start_all)
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._stop_all)

    # -- the two stages ------------------------------------------------------------------------

    async def replay(
        self, executor: ExecutorFactory, task: Task, page: Path | None, evidence: Path
    ) -> Replay:
        """Replay on a replay worker; again on a fresh one when it dies (``worker_lost`` at the end)."""
        from iwr_bench.engine.backends.ray_remote import RemotePool

        lost = ""
        for attempt in range(1, self.settings.tries + 1):
            async with self._slots.hold() as slot:
                try:
                    # The executor only calls pool.page(spec); RemotePool has it with the same signature.
                    remote: Any = RemotePool(self._replay[slot], self._shipper)
                    pool: PagePool = remote
                    return await executor(pool).replay(task, page, evidence)
                except WorkerLost as exc:
                    self.lost += 1
                    lost = str(exc)
                    tries = self.settings.tries
                    log.warning(
                        "task %d: replay worker lost (try %d of %d): %s", task.id, attempt, tries, lost
                    )
                    self._replay[slot] = await anyio.to_thread.run_sync(self._replacement)
        return worker_lost(task, f"the replay worker died {self.settings.tries} times; last: {lost}")

    def _replacement(self) -> Any:
        actor = self._start_replay()
        self._wait_ready([actor])
        return actor

    async def measure(
        self, task: Task, replay: Replay, evidence: Path, metrics: VisualMetrics, protocol: EvalProtocol
    ) -> Measured:
        """The metric stage as in-process; its batches run on the metric workers."""
        return await measure(task, replay, evidence, metrics, protocol)

    def replays_over(self) -> None:
        """Nothing to do: metric workers hold cores of their own (``num_cpus``), apart from the
        replay workers'."""


class _LateWorkers:
    """The metric workers of a backend, which start only when the run opens it."""

    def __init__(self, backend: RayBackend) -> None:
        self._backend = backend

    async def run(self, method: str, *args: Any) -> Any:
        """See :meth:`~iwr_bench.engine.backends.ray_remote.MetricWorkers.run`."""
        return await self._backend._workers.run(method, *args)  # pyright: ignore[reportPrivateUsage]

    def read_text(self, name: str, image: bytes) -> str:
        """See :meth:`~iwr_bench.engine.backends.ray_remote.MetricWorkers.read_text`."""
        return self._backend._workers.read_text(name, image)  # pyright: ignore[reportPrivateUsage]


def worker_lost(task: Task, message: str) -> Replay:
    """The replay record of a pair whose every try lost its worker: nothing counted, failure recorded."""
    return Replay.nothing_run(task.record.action_sequence, "worker_lost", message[:500])
