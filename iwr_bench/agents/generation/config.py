"""Per-model generation settings, and the ``[[models]]`` tables of a TOML run file.

Example run file::

    [[models]]
    name = "openai:gpt-4o"
    max_tokens = 16384

    [[models]]
    name = "vllm:Qwen/Qwen2.5-VL-7B-Instruct"
    base_url = "http://127.0.0.1:8000/v1"
    image_budget = 20
    frame_cap = 20
    max_image_side = 1000
    price = { input_per_mtok = 0.0, output_per_mtok = 0.0 }

Other top-level keys and tables belong to the engine and are ignored here.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from iwr_bench.dataset.frames import DEFAULT_FRAME_CAP, DEFAULT_IMAGE_BUDGET
from iwr_bench.errors import UserError

ThinkingSetting = bool | Literal["minimal", "low", "medium", "high", "xhigh", "max"]

# Prefixes naming a local OpenAI-compatible server kind; stripped from the model id sent.
LOCAL_PREFIXES = frozenset({"vllm", "sglang", "ollama", "lmstudio", "local", "openai-compatible"})


class Price(BaseModel):
    """A price override in USD per million tokens (for models genai-prices does not know)."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(ge=0)
    """USD per million prompt tokens."""
    output_per_mtok: float = Field(ge=0)
    """USD per million completion tokens."""

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Price of one answer."""
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


class ModelConfig(BaseModel):
    """How to call one vision-language model (one ``[[models]]`` table of a run file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    """pydantic-ai model name (``openai:gpt-4o``, ``anthropic:claude-sonnet-4-5``,
    ``google-gla:gemini-2.5-pro``, ``openrouter:...``), or any label when ``base_url`` is set
    (``vllm:Qwen/Qwen2.5-VL-7B``)."""
    model_id: str | None = None
    """Model id sent to an OpenAI-compatible server; default: ``name`` without a local prefix
    (``vllm:``, ``sglang:``, ``ollama:``, ``lmstudio:``, ``local:``)."""
    base_url: str | None = None
    """Base URL of an OpenAI-compatible server (vLLM, SGLang, Ollama, LM Studio), e.g. ``http://127.0.0.1:8000/v1``."""
    api_key_env: str | None = None
    """Environment variable holding the API key; default: the provider's usual one (``OPENAI_API_KEY``, ...).
    For a ``base_url`` server without it, a dummy key is sent."""
    image_budget: int = Field(default=DEFAULT_IMAGE_BUDGET, ge=1)
    """Most images per request (sheets first, then frames)."""
    frame_cap: int = Field(default=DEFAULT_FRAME_CAP, ge=0)
    """Most video frames per request."""
    max_image_side: int | None = Field(default=None, ge=16)
    """Downscale every image so its longer side is at most this many pixels."""
    frame_format: Literal["jpeg", "png"] = "jpeg"
    """Encoding of video frames (sheets are always PNG, since they carry small text)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Completion token limit."""
    thinking: ThinkingSetting | None = None
    """Unified reasoning setting (pydantic-ai ``thinking``): true/false or an effort level."""
    thinking_budget: int | None = Field(default=None, ge=0)
    """Reasoning token budget for providers that take one (Anthropic, Google)."""
    extra_settings: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Further pydantic-ai model settings, passed as they are (e.g. ``openai_reasoning_effort``)."""
    native_video: bool = False
    """Send the mp4 itself where the model class accepts video (Google, OpenRouter, Bedrock);
    frames as images otherwise."""
    timeout: float = Field(default=600.0, gt=0)
    """Seconds one request may take."""
    retries: int = Field(default=4, ge=0)
    """Retries after a 429, 5xx or timeout (so at most ``retries + 1`` requests)."""
    price: Price | None = None
    """Price override; otherwise genai-prices' bundled snapshot is used where it knows the model."""
    folder: str | None = None
    """Name of the model's results folder (before :func:`slugify`); default: ``name``. Under
    ``--protocol official`` a real model's folder is the name the official generator is given (the
    model id without our provider prefix: ``openai:gpt-4.1`` -> ``gpt-4.1``), as its results tree
    has it."""
    tasks: list[int] | None = None
    """The only tasks this model is judged on (a mutant page belongs to its own task); the run's
    other tasks are no pair of it, so they neither run nor count as missing pages. None: every task.
    ``mutants:NAME`` and ``iwr judge`` on mutant folders fill it in."""

    @property
    def provider(self) -> str | None:
        """Provider prefix of ``name`` (``openai`` in ``openai:gpt-4o``), if any."""
        return self.name.split(":", 1)[0] if ":" in self.name else None

    @property
    def server_model_id(self) -> str:
        """Model id sent to a ``base_url`` server."""
        if self.model_id:
            return self.model_id
        if self.provider in LOCAL_PREFIXES or self.provider == "openai":
            return self.name.split(":", 1)[1]
        return self.name

    @property
    def slug(self) -> str:
        """Filesystem-safe name of the model's results folder: ``folder`` when set, else ``name``."""
        return slugify(self.folder or self.name)

    def model_settings(self) -> dict[str, Any]:
        """The pydantic-ai ``ModelSettings`` sent with every request (temperature 0).

        SDK-level retries are turned off (``max_retries=0``): the retry wrapper owns retries.
        """
        settings: dict[str, Any] = {"temperature": 0.0, "timeout": self.timeout, "max_retries": 0}
        if self.max_tokens is not None:
            settings["max_tokens"] = self.max_tokens
        if self.thinking is not None:
            settings["thinking"] = self.thinking
        if self.thinking_budget is not None:
            match self.provider:
                case "anthropic":
                    budget = {"type": "enabled", "budget_tokens": self.thinking_budget}
                    settings["anthropic_thinking"] = budget
                case "google" | "google-gla" | "google-vertex" | "google-cloud":
                    settings["google_thinking_config"] = {"thinking_budget": self.thinking_budget}
                case _:
                    pass
        settings.update(self.extra_settings)
        return settings


class RunFile(BaseModel):
    """The part of a TOML run file this layer reads."""

    model_config = ConfigDict(extra="ignore")

    models: list[ModelConfig] = Field(default_factory=list[ModelConfig])
    """``[[models]]`` tables."""

    def find(self, name: str) -> ModelConfig | None:
        """The model configured under ``name``, if any."""
        return next((m for m in self.models if m.name == name), None)


def load_run_file(path: str | Path) -> RunFile:
    """Read the ``[[models]]`` tables of a TOML run file.

    Raises:
        UserError: when the file is missing, is not TOML, or a model table is invalid.
    """
    path = Path(path).expanduser()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read run file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path} is not valid TOML: {exc}") from exc
    try:
        run = RunFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UserError(f"{path}: {where}: {err['msg']} ({len(exc.errors())} problem(s))") from exc
    names = [m.name for m in run.models]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UserError(f"{path}: model(s) configured twice: {', '.join(dupes)}")
    return run


_UNSAFE = re.compile(r"[^a-z0-9._-]")


def slugify(name: str) -> str:
    """The results-folder name of a model, spelled as the official generator spells it.

    ``name.lower().replace('/', '__')`` (the official rule), then any character outside
    ``[a-z0-9._-]`` becomes ``_``: ``Qwen/Qwen2.5-VL-7B`` -> ``qwen__qwen2.5-vl-7b`` (exactly the
    official folder), ``openai:gpt-4o`` -> ``openai_gpt-4o``. A name made only of dots (which would
    name a parent folder) becomes ``model``.
    """
    slug = _UNSAFE.sub("_", name.lower().replace("/", "__"))
    return slug if slug.strip(".") else "model"
