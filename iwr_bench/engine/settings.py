"""The settings groups of a run file: judges, metrics, limits and the browser (``[judge]``,
``[metrics]``, ``[limits]``, ``[browser]``); :mod:`iwr_bench.engine.config` documents every key."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class RoleSettings(BaseModel):
    """One judging role: which registered design plays it, with which options."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    """Registered design (``iwr judges list``)."""
    options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Arguments of the design's factory."""
    model: str = ""
    """Judge model of this role for designs that take one; empty: ``[judge] model``."""


def _role(value: Any, flat_options: Any = None, *, rubric: bool = False) -> Any:
    """A flat ``grounder = "name"`` (and ``grounder_options``) as a :class:`RoleSettings` table."""
    if isinstance(value, str):
        if rubric:  # the flat rubric key names the rubric judge's model
            return {"name": "llm", "model": value} if value else None
        return {"name": value, "options": flat_options or {}}
    if flat_options and isinstance(value, dict):
        table: dict[str, Any] = dict(value)  # pyright: ignore[reportUnknownArgumentType]
        table["options"] = {**flat_options, **table.get("options", {})}
        return table
    return value


def _official_role(chosen: RoleSettings | None, code: str) -> RoleSettings | None:
    """An ``llm`` role as the ``official-code`` design on the same model (asking with the prompts of
    the checkout at ``code``); any other role as it is."""
    if chosen is None or chosen.name != "llm":
        return chosen
    options = {k: v for k, v in chosen.options.items() if k in ("retries",)}
    return chosen.model_copy(update={"name": "official-code", "options": {**options, "code": code}})


_LABEL = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$"


class DesignSettings(BaseModel):
    """One judge design of a run that compares several (``[[judge.designs]]``): a label, and the
    ``[judge]`` keys it sets differently; every key it leaves out is the ``[judge]`` table's."""

    model_config = ConfigDict(extra="forbid")

    label: str = Field(pattern=_LABEL)
    """Names the design's jobs (``judge/<task>/<model>/<label>``) and results; letters, digits,
    ``.``, ``_`` and ``-``."""
    grounder: RoleSettings | None = None
    grounder_options: dict[str, Any] | None = None
    assertions: RoleSettings | None = None
    step: RoleSettings | None = None
    replay: RoleSettings | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    votes: int | None = Field(default=None, ge=1, le=9)
    retries: int | None = Field(default=None, ge=0, le=10)
    judge_error_policy: Literal["pass", "fail"] | None = None
    undetermined_policy: Literal["pass", "fail"] | None = None
    repeat: int | None = Field(default=None, ge=1, le=100)

    @model_validator(mode="before")
    @classmethod
    def _plain_names(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = dict(data)  # pyright: ignore[reportUnknownArgumentType]
        if "rubric" in out:
            raise ValueError(
                "a design cannot set its own rubric: the rubric (HVS) is measured once per page "
                "for all of a run's designs; set it in [judge]"
            )
        for role in ("grounder", "assertions", "step", "replay"):
            if isinstance(out.get(role), str):
                out[role] = _role(out[role])
        return out


class JudgeSettings(BaseModel):
    """Which judges score the pages, and how their failures count."""

    model_config = ConfigDict(extra="forbid")

    grounder: RoleSettings = RoleSettings(name="heuristic")
    """Registered grounder and its options (a plain name is accepted)."""
    assertions: RoleSettings = RoleSettings(name="heuristic")
    """Registered assertion judge and its options (a plain name is accepted)."""
    rubric: RoleSettings | None = None
    """Rubric (HVS) judge; a plain model name means the ``llm`` rubric on that model; None: HVS
    unavailable."""
    step: RoleSettings | None = None
    """Step judge (e.g. ``[judge.step] name = "agent"``): performs and judges whole actions with the
    page's tools, instead of the grounder and the assertion judge. None: not used."""
    replay: RoleSettings | None = None
    """Replay policy (how a Scroll or Press is performed and counted); None: ``default``, or
    ``official`` under the official protocol."""
    model: str = ""
    """Judge model given to designs that take one (the llm grounder and judges)."""
    base_url: str = ""
    """OpenAI-compatible server of the judge model(s)."""
    api_key_env: str = ""
    """Environment variable with the judge model's key."""
    votes: int = Field(default=1, ge=1, le=9)
    """k-vote majority of the llm assertion judge."""
    retries: int = Field(default=2, ge=0, le=10)
    """Retries of an unparsable judge answer."""
    judge_error_policy: Literal["pass", "fail"] = "fail"
    """What a failed judgement counts as."""
    undetermined_policy: Literal["pass", "fail"] = "pass"
    """What an undecidable assertion counts as."""
    repeat: int = Field(default=1, ge=1, le=100)
    """Which judging of a repeated measurement this is (``iwr judges eval --repeat``): from 2 on, the
    judge models' requests are keyed apart (as if salted with the number), so each repeat asks the
    model again instead of reading the first judging's answers from the stores."""
    cache: bool = True
    """Reuse judge-model answers across runs (``~/.cache/iwr-bench/judge-calls.sqlite``), keyed by
    the request and its server; off, only the run's own store serves them (on resume)."""
    designs: list[DesignSettings] = Field(default_factory=list[DesignSettings])
    """Several judge designs compared in one run (``[[judge.designs]]``): each judges every page
    as a job of its own (``judge/<task>/<model>/<label>``). Empty: the ``[judge]`` table is the
    run's one design, and jobs are ``judge/<task>/<model>``."""

    @model_validator(mode="after")
    def _unique_labels(self) -> JudgeSettings:
        labels = [d.label for d in self.designs]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise ValueError(f"[[judge.designs]] labels must differ: {', '.join(twice)} given twice")
        return self

    def labels(self) -> list[str]:
        """The design labels of the run, in order (``[""]``: one unnamed design, the ``[judge]`` table)."""
        return [d.label for d in self.designs] or [""]

    def design(self, label: str) -> JudgeSettings:
        """The settings of design ``label``: the ``[judge]`` table with the keys the design sets
        (``""``: the table itself)."""
        if not label:
            return self
        chosen = next(d for d in self.designs if d.label == label)
        base = self.model_dump(exclude={"designs"})
        override = chosen.model_dump(exclude={"label"}, exclude_none=True)
        flat = override.pop("grounder_options", None)
        if flat is not None:
            grounder = override.get("grounder", base["grounder"])
            override["grounder"] = {**grounder, "options": {**grounder.get("options", {}), **flat}}
        return JudgeSettings.model_validate({**base, **override})

    @model_validator(mode="before")
    @classmethod
    def _flat_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = dict(data)  # pyright: ignore[reportUnknownArgumentType]
        flat = out.pop("grounder_options", None)
        if "grounder" in out or flat:
            out["grounder"] = _role(out.get("grounder", "heuristic"), flat)
        if "assertions" in out:
            out["assertions"] = _role(out["assertions"])
        if "rubric" in out:
            out["rubric"] = _role(out["rubric"], rubric=True)
        return out

    def with_official_prompts(self, code: str) -> JudgeSettings:
        """These settings with every ``llm`` grounder, assertion and rubric judge replaced by the
        ``official-code`` design on the same model, asking with the prompts of the checkout at
        ``code`` (the offline designs ask no model, so they stay)."""
        update: dict[str, Any] = {
            role: _official_role(getattr(self, role), code) for role in ("grounder", "assertions", "rubric")
        }
        update["designs"] = [  # (each design's own llm roles likewise)
            d.model_copy(
                update={role: _official_role(getattr(d, role), code) for role in ("grounder", "assertions")}
            )
            for d in self.designs
        ]
        return self.model_copy(update=update)

    def roles(self) -> dict[str, RoleSettings]:
        """The configured roles by name (``grounder``, ``assertions`` and, if set, ``rubric``, ``step``,
        ``replay``)."""
        found = {"grounder": self.grounder, "assertions": self.assertions}
        for role, chosen in (("rubric", self.rubric), ("step", self.step), ("replay", self.replay)):
            if chosen is not None:
                found[role] = chosen
        return found


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
    ocr_design: str = Field(default_factory=lambda: _design_default("IWR_OCR_DESIGN", "ocr"))
    """Registered metric design (``iwr judges list``) giving the OCR similarity; default ``ocr``
    (EasyOCR), or ``$IWR_OCR_DESIGN`` when set (``phash``: a cheap stand-in the tests use)."""
    image_design: str = Field(default_factory=lambda: _design_default("IWR_IMAGE_DESIGN", "dino"))
    """Registered metric design giving the image similarity; default ``dino`` (DINOv2 or its
    substitute), or ``$IWR_IMAGE_DESIGN`` when set."""
    measure: bool = True
    """Measure the looks (OCR and image similarity of the scored pairs). False skips the metric
    stage: each eval.json then has no pairs and names the backend ``not-measured``, so its VFS is
    not a score (``iwr judges eval`` measures judges, which only the replays tell apart)."""


def _design_default(variable: str, builtin: str) -> str:
    """A metric design's default: the environment variable when set, else the built-in one.

    A run file or a command-line option still wins, and the run manifest records the design used.
    """
    return os.environ.get(variable, "").strip() or builtin


def default_browser_pages(cores: int | None = None, memory_gb: float | None = None) -> int:
    """Browser pages this machine replays well at once: one per core, one per 1.5 GB free beyond
    2 GB (kept for the metric models), between 1 and 8.

    Measured on 2 cores (the built-in suite, warm cache): 1 page 87.6 s, 2 pages 49.0 s, 4 pages
    121.7 s; more pages than cores fight over them.
    """
    cores = cores if cores is not None else len(os.sched_getaffinity(0))
    memory_gb = memory_gb if memory_gb is not None else _available_gb()
    by_memory = int(max(0.0, memory_gb - 2.0) // 1.5)
    return max(1, min(8, cores, by_memory))


def _available_gb() -> float:
    """Memory available for new work (``MemAvailable``), in GB; plenty when it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024**2
    except (OSError, ValueError, IndexError):
        return 64.0
    return 64.0


class LimitSettings(BaseModel):
    """Named concurrency limits."""

    model_config = ConfigDict(extra="forbid")

    browser_pages: int = Field(default_factory=lambda: default_browser_pages(), ge=1, le=64)
    """Browser pages open at once (default: what the machine's cores and memory allow)."""
    metric_workers: int = Field(default=1, ge=1, le=64)
    """Metric batches computed at once."""
    metric_batch_pairs: int = Field(default=8, ge=1, le=256)
    """Most screenshot pairs one metric batch holds (a job's pairs are never split, so a batch
    holds at least one job). Smaller batches hand values back sooner; a GPU gains from larger
    ones (e.g. 32)."""
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
    """Longest the replay of one judging job may take once it has its browser page: then ``timeout``
    (its later stages have deadlines of their own: each metric batch and judge call)."""
    judge_call_timeout_s: float = Field(default=300.0, gt=0)
    """Longest one grounder, assertion-judge or rubric call may take (waiting for a slot included)."""
    metric_timeout_s: float = Field(default=300.0, gt=0)
    """Longest one metric batch may take once started, before ``metric_pair_timeout_s`` per pair."""
    metric_pair_timeout_s: float = Field(default=30.0, ge=0)
    """Extra time a metric batch gets per screenshot pair it holds (see ``metric_batch_pairs``)."""
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
    isolation: Literal["context", "browser"] = "browser"
    """A Chromium per browser page (the default): the memory a page makes the shared GPU and
    browser processes hold counts against that page's bound alone, so a hog stops and its
    neighbours go on. ``context``: pages in contexts of one Chromium (less memory; shared growth
    then stops the largest page first, which is very likely, not surely, the hog). Measured
    (``benchmarks/bench_browser.py --pool``, 2 cores, 12 pages): on 2 slots the same time within
    the spread and about 0.9 GiB more memory with a browser each; on 3 slots about 10% longer."""
