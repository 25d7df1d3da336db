"""A run's set-up: its tasks, generators, metrics and browser pool, and the manifest that records them.

Everything a user can get wrong fails here, in one line, before any work starts.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from iwr_bench.agents.generation import (
    Budget,
    Generator,
    LVLMGenerator,
    ModelConfig,
    ResponseCache,
    build_generator,
)
from iwr_bench.agents.generation.official import describe, for_protocol
from iwr_bench.agents.generation.prompt import PromptFile
from iwr_bench.dataset.layout import Task, load_tasks, unreadable
from iwr_bench.dataset.validate import data_faults, read_otherwise_officially
from iwr_bench.engine.batching import BatchingMetric
from iwr_bench.engine.config import RunConfig, generator_design, is_baseline, provider_of
from iwr_bench.engine.deadlines import Background
from iwr_bench.engine.limits import LimitedCaller, Limits
from iwr_bench.engine.settings import MetricSettings
from iwr_bench.errors import UserError
from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.pair import CachedMetric, PairMetric
from iwr_bench.protocol import EvalProtocol
from iwr_bench.registry import build
from iwr_bench.scoring.evaluation import VisualMetrics
from iwr_bench.tools.chromium import chromium_version as version_of
from iwr_bench.tools.models import Limits as PageLimits
from iwr_bench.tools.models import SettleConfig
from iwr_bench.tools.pool import PoolConfig

log = logging.getLogger(__name__)

PACKAGES = (
    "iwr-bench",
    "anyio",
    "browser-use",
    "pydantic-ai-slim",
    "pydantic",
    "aiohttp",
    "imagehash",
    "open_clip_torch",
    "torch",
    "torchvision",
    "transformers",
    "easyocr",
    "textual",
    "av",
)
"""Packages whose versions shape results (recorded in the manifest)."""


def builtin_suite() -> Path:
    """The built-in suite's ``data.jsonl``."""
    return Path(__file__).resolve().parent.parent / "suites" / "sample" / "data.jsonl"


def package_versions() -> dict[str, str]:
    """Versions of the packages that shape results."""
    out: dict[str, str] = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def chromium_version() -> str:
    """``chromium --version``, or why it is unknown."""
    return version_of(os.environ.get("IWR_CHROMIUM", "/usr/bin/chromium"))


def preload_libraries() -> None:
    """Import the heavy libraries judges and metrics use (torch, torchvision, transformers) before
    any deadline starts: the import takes seconds on a busy machine, and a judge call that paid for
    it (the heuristic grounder's sentence embedder, on its first call) could miss its deadline.

    Loads no model; call it off the event loop.
    """
    from iwr_bench._torch import import_torchvision

    import_torchvision()
    importlib.import_module("transformers")


def load_run_tasks(cfg: RunConfig, *, generate: bool = True) -> tuple[list[Task], Path, list[dict[str, Any]]]:
    """The tasks a run covers, where they come from, and the records that could not be read or
    whose files are broken (data faults, see :func:`~iwr_bench.dataset.validate.data_faults`).

    A data fault is the task's, never a model's: it stops the command before any model is called,
    or with ``skip_invalid`` leaves the task out (counted with the unreadable records). The video
    is checked only when ``generate`` and a real model (not a baseline) will watch it.

    Raises:
        UserError: a missing source, unknown ids, a data fault without ``skip_invalid``, or no
            readable task.
    """
    source = builtin_suite() if cfg.tasks == "builtin" else Path(cfg.tasks).expanduser()
    if not source.exists():
        raise UserError(f"tasks: {source} does not exist")
    task_set = load_tasks(source)
    skipped = [p.model_dump(mode="json") for p in unreadable(task_set, skip_invalid=cfg.skip_invalid)]
    tasks = task_set.tasks
    if cfg.only:
        missing = sorted(set(cfg.only) - {t.id for t in tasks})
        if missing:
            raise UserError(f"task id(s) not in {source}: {', '.join(map(str, missing))}")
        tasks = [t for t in tasks if t.id in set(cfg.only)]
    needs_video = generate and any(not is_baseline(m) for m in cfg.models)
    official = cfg.protocol is EvalProtocol.official
    faults = {t.id: data_faults(t, needs_video=needs_video, official=official) for t in tasks}
    for task in tasks:  # read our way under the default protocol, theirs under the official one
        for field, note in read_otherwise_officially(task):
            if field != "recording_details.resolution" or not official:  # (that one is a fault there)
                how = "this run reads it as the official scripts do" if official else "read our way"
                log.warning("task %s: %s: %s (%s)", task.id, field, note, how)
    broken = [p for found in faults.values() for p in found]
    if broken and not cfg.skip_invalid:
        ids = sorted({p.task_id for p in broken if p.task_id is not None})
        lines = "\n".join(f"  {p.format()}" for p in broken[:10])
        more = f"\n  ... and {len(broken) - 10} more" if len(broken) > 10 else ""
        raise UserError(
            f"{len(ids)} task(s) of {source} have broken data ({', '.join(map(str, ids[:10]))}); nothing "
            f"was run, so no model is charged for them:\n{lines}{more}\nFix them (`iwr tasks validate "
            f"{source}`), or pass --skip-invalid to leave them out"
        )
    skipped += [p.model_dump(mode="json") for p in broken]
    tasks = [t for t in tasks if not faults[t.id]]
    if not tasks:
        raise UserError(f"{source} holds no readable task (run `iwr tasks validate {source}`)")
    return tasks, source, skipped


class GeneratorFactory:
    """Builds each model's generator: a registered design, or a model behind the call wrappers
    (provider limit, retries, budget, response cache)."""

    def __init__(
        self,
        cfg: RunConfig,
        limits: Limits,
        cache_dir: Path | None,
        overrides: dict[str, Any],
        prompt: PromptFile | None,
        *,
        asset_base: str | None = None,
    ) -> None:
        self.cfg = cfg
        self.asset_base = asset_base
        self.limits = limits
        self.cache_dir = cache_dir
        self.overrides = overrides
        self.prompt = prompt
        self.budget = Budget(cfg.budget_usd or None)

    def __call__(self, m: ModelConfig) -> Generator:
        """The generator of one model entry."""
        design = generator_design(m)
        if design is not None and m.slug not in self.overrides:
            extra = {"asset_base": self.asset_base} if design[0] == "oracle" and self.asset_base else {}
            generator, _ = build("generator", design[0], {**design[1], **extra})
            return generator
        limit = self.limits.provider(provider_of(m))
        return build_generator(  # the one caller stack (agents/generation/lvlm.py: build_caller)
            m,
            cache=ResponseCache(self.cache_dir) if self.cache_dir is not None else None,
            budget=self.budget,
            slot=lambda inner: LimitedCaller(inner, limit),
            model=self.overrides.get(m.slug),
            asset_base=self.asset_base,
            protocol=self.cfg.protocol,
            prompt=self.prompt,
        )

    def manifest(self) -> dict[str, Any]:
        """Protocol, prompt file, and per model the preset and settings in effect."""
        protocol, prompt = self.cfg.protocol, self.prompt
        models = [m for m in self.cfg.models if not is_baseline(m) or m.slug in self.overrides]
        return {
            "protocol": protocol.value,
            "prompt_file": prompt.path if prompt else None,
            "prompt_file_sha256": prompt.sha256 if prompt else None,
            "models": {m.slug: describe(m, *for_protocol(m, protocol)) for m in models},
        }


@asynccontextmanager
async def opened_generators(generators: dict[str, Generator]) -> AsyncGenerator[None]:
    """Open the generators that hold connections (model clients) for the time of a run."""
    async with AsyncExitStack() as stack:
        for generator in generators.values():
            if isinstance(generator, LVLMGenerator):
                await stack.enter_async_context(generator)
        yield


PAPER_DESIGNS = {"ocr": ("ocr", "ocr-torch"), "dino": ("dino",)}
"""Metric designs that compute the paper's metric (any other design is labelled a substitute):
``ocr`` runs EasyOCR's detector under OpenVINO, with the same boxes as ``ocr-torch`` (PyTorch)."""


def metric_store(m: MetricSettings) -> MetricCache:
    """The store a run's metrics share: the persistent cache, or (``cache = false``) one that keeps
    nothing across runs; either answers first with values seeded from task features."""
    return MetricCache.default(m.cache_dir or None) if m.cache else MetricCache.memory()


def metric_designs(m: MetricSettings, store: MetricCache | None = None) -> tuple[PairMetric, PairMetric]:
    """The OCR and the image design of ``m``, as a run builds them (so their backends, and the
    namespaces their values are kept under, are the run's), each labelled a substitute when it is
    not the paper's.

    Builds no model: models load when a value is first missing from the store.

    Raises:
        UserError: an unknown design or options that do not fit.
    """
    context: dict[str, Any] = {
        "device": m.device,
        "cache_dir": (m.cache_dir or "") if m.cache else None,
        "model": m.dino,
        "fallback": "effnet-lite0" if m.dino_fallback else None,
        "store": store,
    }
    ocr, _ = build("metric", m.ocr_design, context=context)
    dino, _ = build("metric", m.image_design, context=context)
    for metric, design, paper in ((ocr, m.ocr_design, "ocr"), (dino, m.image_design, "dino")):
        # e.g. phash for OCR: not paper-comparable
        if design not in PAPER_DESIGNS[paper] and not metric.backend.substitute:
            metric.backend.substitute = True
            metric.backend.note = metric.backend.note or f"the {design!r} design stands in for {paper!r}"
    return ocr, dino


def build_metrics(
    cfg: RunConfig,
    limits: Limits,
    timer: Callable[[], AbstractContextManager[None]],
    background: Background,
    place: Callable[[str, PairMetric], PairMetric] | None = None,
) -> VisualMetrics:
    """The run's metrics: each design cached (across runs) and batched under the metric-workers limit.

    ``place(role, design)`` says where a design computes (the Ray backend: a proxy to its metric
    workers); None: here. The cache and the batching stay on the driver either way.

    The designs and the pair cache share one store (:func:`metric_store`), into which the engine
    seeds the tasks' stored features (:mod:`iwr_bench.engine.task_features`). Builds no model:
    models load when a value is first missing from the cache.
    """
    store = metric_store(cfg.metrics)
    ocr, dino = metric_designs(cfg.metrics, store)

    def wrap(role: str, metric: PairMetric) -> PairMetric:
        timeout, per_pair = cfg.limits.metric_timeout_s, cfg.limits.metric_pair_timeout_s
        cached = CachedMetric(place(role, metric) if place is not None else metric, store)
        return BatchingMetric(
            cached,
            limits.metric,
            max_batch=cfg.limits.metric_batch_pairs,
            timer=timer,
            timeout=timeout,
            pair_timeout=per_pair,
            background=background,
        )

    return VisualMetrics(ocr=wrap("ocr", ocr), dino=wrap("dino", dino))


OFFICIAL_ACTION_TIMEOUT_S = 30.0
"""The official replay's limit per action (its LLM calls included)."""
OFFICIAL_LOAD_TIMEOUT_S = 60.0
"""The official replay's limit for opening the page."""


def pool_config(cfg: RunConfig) -> PoolConfig:
    """The browser pool of a run: its page count, settling and per-page limits. Under the official
    protocol the official limits apply (30 s an action, 60 s the page load) unless the run file
    sets its own."""
    b = cfg.browser
    action, load = b.action_timeout_s, b.load_timeout_s
    if cfg.protocol == EvalProtocol.official:
        action = action if "action_timeout_s" in b.model_fields_set else OFFICIAL_ACTION_TIMEOUT_S
        load = load if "load_timeout_s" in b.model_fields_set else OFFICIAL_LOAD_TIMEOUT_S
    return PoolConfig(
        size=cfg.limits.browser_pages,
        isolation=b.isolation,
        settle=SettleConfig(mode="fixed" if cfg.protocol == EvalProtocol.official else b.settle),
        limits=PageLimits(action_timeout=action, load_timeout=load),
    )


def effective_policies(cfg: RunConfig) -> dict[str, str]:
    """What happens to an error or undetermined verdict in this run: under the official protocol
    both pass (the official scripts count an "Error" answer as a pass), whatever the options say."""
    if cfg.protocol == EvalProtocol.official:
        return {"judge_error": "pass", "undetermined": "pass"}
    return {"judge_error": cfg.judge.judge_error_policy, "undetermined": cfg.judge.undetermined_policy}
