"""The run configuration: what ``iwr run -c run.toml`` reads and what the manifest records.

A complete run file (every key is optional; the values shown are the defaults)::

    tasks = "builtin"             # the built-in suite; or a dataset root, .jsonl file or task folder
    only = []                     # task ids to keep (empty: all)
    out = "runs/<timestamp>"      # run folder (``--out`` wins)
    budget_usd = 0                # stop new paid model calls past this (0: no cap)
    protocol = "default"          # or "official": the authors' scripts, rule for rule
    prompt_file = ""              # generation instructions from this file instead of ours
    official_code = ""            # a checkout of the authors' code: their prompts (protocol official)
    plugins = []                  # modules or .py files that register designs (README: Write your own judge)
    skip_invalid = false          # go on without data.jsonl lines that cannot be read (counted)

    [[models]]                    # one table per model; a baseline is just a name
    name = "oracle"
    [[models]]
    name = "openai:gpt-4o"        # any ModelConfig field: base_url, image_budget, frame_cap, ...
    max_tokens = 16384
    [[models]]
    name = "mutants:cards-restyled"  # pages as models: mutants:NAME, pages:DIR, pages:DIR#NAME

    [judge]
    grounder = "heuristic"        # any registered grounder (`iwr judges list`): heuristic, llm, ...
    assertions = "heuristic"      # any registered assertion judge: heuristic, llm, ...
    rubric = ""                   # a model name gives HVS; empty: HVS unavailable (VFS = LVS)
    model = ""                    # judge model of designs that take one (the llm grounder / judges)
    base_url = ""                 # OpenAI-compatible server of the judge model(s)
    api_key_env = ""
    votes = 1                     # k-vote majority of the llm assertion judge
    retries = 2                   # retries of an unusable judge answer
    grounder_options = {}         # factory arguments, e.g. { clip_model = "ViT-B-32",
                                  #   clip_pretrained = "/path/clip.safetensors" } for the heuristic one
    judge_error_policy = "fail"   # what a failed judgement counts as (the published code: pass)
    undetermined_policy = "pass"

    # Each role may instead be a table with its options (and, for model-backed designs, a model):
    # [judge.grounder]
    # name = "heuristic"
    # options = { threshold = 0.5 }
    # [judge.assertions]
    # name = "llm"
    # options = { votes = 3 }
    # [judge.rubric]
    # name = "llm"
    # model = "openai:gpt-4o"

    [metrics]
    dino = "facebook/dinov2-base" # hub id or local folder; falls back to a labelled substitute
    dino_fallback = true
    device = "auto"
    cache = true                  # reuse metric values of identical screenshots across runs
    ocr_design = "ocr"            # registered metric designs behind OCR and image similarity
    image_design = "dino"         # (defaults: $IWR_OCR_DESIGN / $IWR_IMAGE_DESIGN when set)

    [limits]
    browser_pages = 2             # default: one per core (and per 1.5 GB free), 1 to 8
    metric_workers = 1
    metric_batch_pairs = 8        # pairs per metric batch (a GPU gains from 32)
    judge_calls = 4
    model_calls = 4               # per provider, unless [limits.providers] says otherwise
    providers = { openai = 8 }
    recover_after_s = 30          # adaptive limits grow back after this long without a 429
    generation_timeout_s = 3600   # one generation job, waiting for its provider included
    judge_timeout_s = 1200        # one job's replay, from the moment it has its browser page
    judge_call_timeout_s = 300    # one grounder / assertion judge / rubric call (queue included)
    metric_timeout_s = 300        # one metric batch, once started ...
    metric_pair_timeout_s = 30    # ... plus this per screenshot pair in it
    stall_after_s = 180           # a judging job silent this long (outside the steps above) is failed

    [browser]
    settle = "stable"             # or "fixed" (the published 1 s / 0.5 s / 1 s waits)
    action_timeout_s = 10         # one browser action, settling included
    load_timeout_s = 15           # the page's initial load
    isolation = "context"         # or "browser": a Chromium per page slot (WebGL and storage memory
                                  # then bounded per page; about 550 MiB more per slot)

    [backend]
    kind = "in-process"           # or "ray": replay and metric workers as Ray actors (docs/scaling.md),
                                  # or the name of a backend a plugin registers
    options = {}                  # a plugin backend's options (the built-in ones take none)
    address = ""                  # ray: HOST:PORT of a cluster's head; empty: a local Ray instance
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from iwr_bench.agents.generation.config import ModelConfig, slugify
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.backends.settings import BackendSettings
from iwr_bench.engine.settings import (
    BrowserSettings,
    JudgeSettings,
    LimitSettings,
    MetricSettings,
    RoleSettings,
    default_browser_pages,
)
from iwr_bench.errors import UserError
from iwr_bench.protocol import EvalProtocol

DEMO_MODELS = ("oracle", "screenshot", "blank")
"""The offline demo's generators."""


class RunConfig(BaseModel):
    """Everything a run is configured with (recorded in the manifest)."""

    model_config = ConfigDict(extra="forbid")

    tasks: str = "builtin"
    """``builtin`` or a path."""
    only: list[int] = Field(default_factory=list[int])
    """Task ids to keep."""
    out: str = ""
    """Run folder."""
    budget_usd: float = Field(default=0.0, ge=0)
    """Cap on paid generation calls (0: none)."""
    protocol: EvalProtocol = EvalProtocol.default
    """``default`` (this project's protocol) or ``official`` (the authors' scripts, rule for rule)."""
    prompt_file: str = ""
    """Generation instructions read from this file (``{resolution}`` is filled in); empty: ours."""
    official_code: str = ""
    """A checkout of the authors' code (``--official-code``): under ``protocol = "official"`` the
    generation prompt and the LLM judges' prompts are read from it at run time
    (:mod:`iwr_bench.official_code`); empty: ours, and tables say "official rules, own prompts"."""
    plugins: list[str] = Field(default_factory=list[str])
    """Modules or ``.py`` files whose import registers designs (loaded before anything is built;
    relative paths are from the folder the run was started in)."""
    skip_invalid: bool = False
    """Go on without task records that cannot be read (they are counted in the summary); otherwise
    the first one stops the run with its line number."""
    models: list[ModelConfig] = Field(default_factory=list[ModelConfig])
    """Generators: models or baselines."""
    judge: JudgeSettings = JudgeSettings()
    """Judges."""
    metrics: MetricSettings = Field(default_factory=MetricSettings)
    """Metric backends."""
    limits: LimitSettings = LimitSettings()
    """Concurrency limits."""
    browser: BrowserSettings = BrowserSettings()
    """Browser settings."""
    backend: BackendSettings = BackendSettings()
    """Where the replay and metric stages run: in-process (default), on Ray, or a plugin's backend."""

    @field_validator("models")
    @classmethod
    def _unique(cls, models: list[ModelConfig]) -> list[ModelConfig]:
        slugs = [m.slug for m in models]
        dupes = sorted({s for s in slugs if slugs.count(s) > 1})
        if dupes:
            raise ValueError(f"model(s) given twice: {', '.join(dupes)}")
        return models

    @field_validator("models")
    @classmethod
    def _mutants_own_tasks(cls, models: list[ModelConfig]) -> list[ModelConfig]:
        """A built-in mutant (``mutants:NAME``) is judged only on the tasks that have it."""
        from iwr_bench.agents.generation.pages import mutant_tasks

        return [
            m.model_copy(update={"tasks": mutant_tasks(m.name.split(":", 1)[1])})
            if m.tasks is None and m.name.startswith("mutants:") and mutant_tasks(m.name.split(":", 1)[1])
            else m
            for m in models
        ]

    @model_validator(mode="after")
    def _official_folders(self) -> RunConfig:
        """Under the official protocol a real model's results folder is named as the official
        generator names it (``gpt-4.1``, not ``openai_gpt-4.1``), unless the entry sets ``folder``;
        with ``official_code`` the LLM judges ask with the official prompts."""
        if self.protocol is not EvalProtocol.official:
            if self.official_code:
                raise ValueError('official_code (--official-code) needs protocol = "official"')
            return self
        if self.official_code:
            if self.prompt_file:
                raise ValueError("prompt_file and official_code both give the generation prompt: give one")
            self.judge = self.judge.with_official_prompts(self.official_code)
        from iwr_bench.agents.generation.official import official_model_name

        self.models = [
            m
            if m.folder is not None or is_baseline(m)
            else m.model_copy(update={"folder": official_model_name(m)})
            for m in self.models
        ]
        self._unique(self.models)
        return self

    @property
    def model_slugs(self) -> list[str]:
        """Results-folder names of the models, in order."""
        return [m.slug for m in self.models]

    def model_tasks(self, task_ids: list[int]) -> dict[str, list[int]]:
        """Each model's tasks among ``task_ids``: all of them unless the model names its own."""
        return {
            m.slug: list(task_ids) if m.tasks is None else [t for t in task_ids if t in set(m.tasks)]
            for m in self.models
        }

    def with_defaults(self) -> RunConfig:
        """This config, with the demo's baselines when no model is given."""
        if self.models:
            return self
        return self.model_copy(update={"models": [ModelConfig(name=n) for n in DEMO_MODELS]})


def generator_design(model: ModelConfig) -> tuple[str, dict[str, Any]] | None:
    """The registered generator a model entry names, with its arguments; None for a real model.

    ``oracle``, ``blank`` and other registered names build with no argument; ``NAME:SOURCE``
    (``pages:DIR``, ``mutants:cards-restyled``) gives ``SOURCE`` to a generator taking ``source``.
    None of them needs a provider or a key.
    """
    if model.base_url is not None:
        return None
    from iwr_bench.registry import names, parameters

    known = [n for n in names("generator") if n != "lvlm"]
    if model.name in known:
        return model.name, {}
    prefix, sep, rest = model.name.partition(":")
    if sep and prefix in known and "source" in parameters("generator", prefix):
        return prefix, {"source": rest}
    return None


def is_baseline(model: ModelConfig) -> bool:
    """Whether a model entry names a registered generator (a baseline, pages, mutants) rather than a model."""
    return generator_design(model) is not None


def parse_only(only: str | None) -> list[int]:
    """Task ids of an ``--only 1,2`` option (empty: all).

    Raises:
        UserError: when a part is not a task id.
    """
    if only is None:
        return []
    try:
        ids = [int(x) for x in only.split(",") if x.strip()]
    except ValueError as exc:
        raise UserError(f"--only takes comma-separated task ids, not {only!r}") from exc
    if not ids:
        raise UserError("--only names no task id (leave it out to take every task)")
    return ids


def only_tasks(tasks: list[Task], only: str | None, source: Path | str) -> list[Task]:
    """The tasks an ``--only`` option keeps, in their order.

    Raises:
        UserError: a malformed option, or ids that ``source`` does not hold.
    """
    ids = parse_only(only)
    if not ids:
        return tasks
    missing = sorted(set(ids) - {t.id for t in tasks})
    if missing:
        raise UserError(f"task id(s) not in {source}: {', '.join(map(str, missing))}")
    return [t for t in tasks if t.id in set(ids)]


def provider_of(model: ModelConfig) -> str:
    """The name of the provider limit a model's calls count against."""
    if model.base_url:
        from urllib.parse import urlparse

        return urlparse(model.base_url).netloc or model.base_url
    return model.provider or "default"


def load_run_config(path: Path) -> RunConfig:
    """Read a TOML run file.

    Raises:
        UserError: missing file, bad TOML, or an invalid setting (one line naming it).
    """
    path = path.expanduser()
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read run file {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path} is not valid TOML: {exc}") from exc
    config = parse_run_config(data, str(path))
    return config.model_copy(update={"plugins": plugin_refs(config.plugins, path.parent)})


def plugin_refs(refs: list[str], base: Path) -> list[str]:
    """Plugin references with file paths made absolute (relative ones are taken from ``base``)."""
    from iwr_bench.registry import is_file_ref

    return [str((base / Path(r).expanduser()).resolve()) if is_file_ref(r) else r for r in refs]


def parse_run_config(data: dict[str, Any], where: str = "run config") -> RunConfig:
    """Validate a run config given as data.

    Raises:
        UserError: naming the first invalid setting.
    """
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        err = errors[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise UserError(f"{where}: {loc}: {err['msg']}{more}") from exc


__all__ = [
    "DEMO_MODELS",
    "BrowserSettings",
    "JudgeSettings",
    "LimitSettings",
    "MetricSettings",
    "RoleSettings",
    "RunConfig",
    "default_browser_pages",
    "generator_design",
    "is_baseline",
    "load_run_config",
    "only_tasks",
    "parse_only",
    "parse_run_config",
    "plugin_refs",
    "provider_of",
    "slugify",
]
