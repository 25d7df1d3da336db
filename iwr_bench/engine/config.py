"""The run configuration: what ``iwr run -c run.toml`` reads and what the manifest records.

A complete run file (every key is optional; the values shown are the defaults)::

    tasks = "builtin"             # the built-in suite; or a dataset root, .jsonl file or task folder
    only = []                     # task ids to keep (empty: all)
    out = "runs/<timestamp>"      # run folder (``--out`` wins)
    budget_usd = 0                # stop new paid model calls past this (0: no cap)
    protocol = "default"          # or "official": the authors' scripts, rule for rule
    prompt_file = ""              # generation instructions from this file instead of ours
    skip_invalid = false          # go on without data.jsonl lines that cannot be read (counted)

    [[models]]                    # one table per model; a baseline is just a name
    name = "oracle"
    [[models]]
    name = "openai:gpt-4o"        # any ModelConfig field: base_url, image_budget, frame_cap, ...
    max_tokens = 16384

    [judge]
    grounder = "heuristic"        # or "llm"
    assertions = "heuristic"      # or "llm"
    rubric = ""                   # a model name gives HVS; empty: HVS unavailable (VFS = LVS)
    model = ""                    # judge model for the llm grounder / assertion judge
    base_url = ""                 # OpenAI-compatible server of the judge model(s)
    api_key_env = ""
    votes = 1                     # k-vote majority of the llm assertion judge
    retries = 2                   # retries of an unusable judge answer
    grounder_options = {}         # factory arguments, e.g. { clip_model = "ViT-B-32",
                                  #   clip_pretrained = "/path/clip.safetensors" } for the heuristic one
    judge_error_policy = "fail"   # what a failed judgement counts as (the published code: pass)
    undetermined_policy = "pass"

    [metrics]
    dino = "facebook/dinov2-base" # hub id or local folder; falls back to a labelled substitute
    dino_fallback = true
    device = "auto"
    cache = true                  # reuse metric values of identical screenshots across runs

    [limits]
    browser_pages = 2
    metric_workers = 1
    judge_calls = 4
    model_calls = 4               # per provider, unless [limits.providers] says otherwise
    providers = { openai = 8 }
    recover_after_s = 30          # adaptive limits grow back after this long without a 429
    generation_timeout_s = 3600   # one generation job, waiting for its provider included
    judge_timeout_s = 1200        # one judging job, from the moment it has its browser page
    judge_call_timeout_s = 300    # one grounder / assertion judge / rubric call (queue included)
    metric_timeout_s = 300        # one metric batch, once started
    stall_after_s = 180           # a judging job silent this long (outside the steps above) is failed

    [browser]
    settle = "stable"             # or "fixed" (the published 1 s / 0.5 s / 1 s waits)
    action_timeout_s = 10         # one browser action, settling included
    load_timeout_s = 15           # the page's initial load
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from iwr_bench.agents.generation.baselines import BASELINES
from iwr_bench.agents.generation.config import ModelConfig, slugify
from iwr_bench.errors import UserError
from iwr_bench.protocol import EvalProtocol

DEMO_MODELS = ("oracle", "screenshot", "blank")
"""The offline demo's generators."""


class JudgeSettings(BaseModel):
    """Which judges score the pages, and how their failures count."""

    model_config = ConfigDict(extra="forbid")

    grounder: str = "heuristic"
    """Registered grounder."""
    assertions: str = "heuristic"
    """Registered assertion judge."""
    rubric: str = ""
    """Rubric (HVS) judge model; empty: HVS unavailable."""
    model: str = ""
    """Judge model for the llm grounder and assertion judge."""
    base_url: str = ""
    """OpenAI-compatible server of the judge model(s)."""
    api_key_env: str = ""
    """Environment variable with the judge model's key."""
    votes: int = Field(default=1, ge=1, le=9)
    """k-vote majority of the llm assertion judge."""
    grounder_options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Arguments of an offline grounder's factory (e.g. CLIP for the heuristic one)."""
    retries: int = Field(default=2, ge=0, le=10)
    """Retries of an unparsable judge answer."""
    judge_error_policy: Literal["pass", "fail"] = "fail"
    """What a failed judgement counts as."""
    undetermined_policy: Literal["pass", "fail"] = "pass"
    """What an undecidable assertion counts as."""


class MetricSettings(BaseModel):
    """Visual metric backends."""

    model_config = ConfigDict(extra="forbid")

    dino: str = "facebook/dinov2-base"
    """DINOv2 hub id or local folder."""
    dino_fallback: bool = True
    """Use the labelled effnet-lite0 substitute when DINOv2 cannot load."""
    device: str = "auto"
    """torch device: auto (GPU when present), cpu, cuda, ..."""
    cache: bool = True
    """Reuse metric values of identical screenshots across runs (keyed by backend and pixels)."""
    cache_dir: str = ""
    """Where that cache lives (default ``~/.cache/iwr-bench``)."""


class LimitSettings(BaseModel):
    """Named concurrency limits."""

    model_config = ConfigDict(extra="forbid")

    browser_pages: int = Field(default=2, ge=1, le=64)
    """Browser pages open at once."""
    metric_workers: int = Field(default=1, ge=1, le=64)
    """Metric batches computed at once."""
    judge_calls: int = Field(default=4, ge=1, le=256)
    """Judge-model requests at once."""
    model_calls: int = Field(default=4, ge=1, le=256)
    """Generation requests at once per provider (default)."""
    providers: dict[str, int] = Field(default_factory=dict[str, int])
    """Per-provider overrides of ``model_calls``."""
    recover_after_s: float = Field(default=30.0, gt=0)
    """Quiet time after which a rate-limited provider's limit grows by one."""
    generation_timeout_s: float = Field(default=3600.0, gt=0)
    """Longest one generation job may take (waiting for its provider included): then ``timeout``."""
    judge_timeout_s: float = Field(default=1200.0, gt=0)
    """Longest one judging job may take once it has its browser page: then ``timeout``."""
    judge_call_timeout_s: float = Field(default=300.0, gt=0)
    """Longest one grounder, assertion-judge or rubric call may take (waiting for a slot included)."""
    metric_timeout_s: float = Field(default=300.0, gt=0)
    """Longest one metric batch may take once started."""
    stall_after_s: float = Field(default=180.0, gt=0)
    """A judging job with no sign of life this long, outside a step with its own deadline or a
    queue, is failed as ``stalled`` and its browser page freed."""


class BrowserSettings(BaseModel):
    """Browser behaviour of the judge."""

    model_config = ConfigDict(extra="forbid")

    settle: Literal["stable", "fixed"] = "stable"
    """Wait for stable screenshots, or the published fixed waits."""
    action_timeout_s: float = Field(default=10.0, gt=0)
    """Longest one browser action (settling included) may take: then the action fails as ``timeout``."""
    load_timeout_s: float = Field(default=15.0, gt=0)
    """Longest the page's initial load may take: then ``page_load_failed``."""


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
    skip_invalid: bool = False
    """Go on without task records that cannot be read (they are counted in the summary); otherwise
    the first one stops the run with its line number."""
    models: list[ModelConfig] = Field(default_factory=list[ModelConfig])
    """Generators: models or baselines."""
    judge: JudgeSettings = JudgeSettings()
    """Judges."""
    metrics: MetricSettings = MetricSettings()
    """Metric backends."""
    limits: LimitSettings = LimitSettings()
    """Concurrency limits."""
    browser: BrowserSettings = BrowserSettings()
    """Browser settings."""

    @field_validator("models")
    @classmethod
    def _unique(cls, models: list[ModelConfig]) -> list[ModelConfig]:
        slugs = [m.slug for m in models]
        dupes = sorted({s for s in slugs if slugs.count(s) > 1})
        if dupes:
            raise ValueError(f"model(s) given twice: {', '.join(dupes)}")
        return models

    @property
    def model_slugs(self) -> list[str]:
        """Results-folder names of the models, in order."""
        return [m.slug for m in self.models]

    def with_defaults(self) -> RunConfig:
        """This config, with the demo's baselines when no model is given."""
        if self.models:
            return self
        return self.model_copy(update={"models": [ModelConfig(name=n) for n in DEMO_MODELS]})


def is_baseline(model: ModelConfig) -> bool:
    """Whether a model entry names a baseline generator."""
    return model.name in BASELINES and model.base_url is None


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
    return parse_run_config(data, str(path))


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
    "RunConfig",
    "is_baseline",
    "load_run_config",
    "parse_run_config",
    "provider_of",
    "slugify",
]
