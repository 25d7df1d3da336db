"""Generators: a vision-language model (any pydantic-ai model or OpenAI-compatible server) or a baseline.

Entry points for the engine:

- :class:`Generator` - the role Protocol (``name``, ``async __call__(task) -> GenerationResult``).
- :func:`build_generator` - a generator from a :class:`ModelConfig` (+ shared cache and budget).
- :func:`load_run_file` - the ``[[models]]`` tables of a TOML run file.
- ``registry.create("generator", "oracle" | "screenshot" | "blank" | "lvlm", ...)``.
- :func:`write_result` - the results tree ``<out>/<id>/<slug>/index.html`` + ``generation.json``.
- :func:`for_protocol` - a model config completed by the official preset (``--protocol official``).
"""

from __future__ import annotations

from iwr_bench.agents.generation.baselines import (
    BASELINES,
    BlankGenerator,
    OracleGenerator,
    ScreenshotGenerator,
)
from iwr_bench.agents.generation.calls import AgentCaller, Caller, ModelAnswer, ModelCall
from iwr_bench.agents.generation.config import ModelConfig, Price, RunFile, load_run_file, slugify
from iwr_bench.agents.generation.errors import BudgetExhausted, FailureKind, GenerationError
from iwr_bench.agents.generation.lvlm import LVLMGenerator, build_caller, build_generator
from iwr_bench.agents.generation.models import build_model
from iwr_bench.agents.generation.official import PRESETS, Preset, for_protocol, preset_for
from iwr_bench.agents.generation.output import read_record, result_dir, write_result
from iwr_bench.agents.generation.postprocess import PLACEHOLDER, postprocess
from iwr_bench.agents.generation.prompt import PromptFile, load_prompt_file
from iwr_bench.agents.generation.protocol import Generator, opened
from iwr_bench.agents.generation.records import (
    CallUsage,
    ErrorInfo,
    GenerationResult,
    ModelTotals,
    SentRequest,
    totals,
)
from iwr_bench.agents.generation.wrappers import (
    Budget,
    BudgetedCaller,
    CachingCaller,
    ResponseCache,
    RetryingCaller,
    RetryPolicy,
)

__all__ = [
    "BASELINES",
    "PLACEHOLDER",
    "PRESETS",
    "AgentCaller",
    "BlankGenerator",
    "Budget",
    "BudgetExhausted",
    "BudgetedCaller",
    "CachingCaller",
    "CallUsage",
    "Caller",
    "ErrorInfo",
    "FailureKind",
    "GenerationError",
    "GenerationResult",
    "Generator",
    "LVLMGenerator",
    "ModelAnswer",
    "ModelCall",
    "ModelConfig",
    "ModelTotals",
    "OracleGenerator",
    "Preset",
    "Price",
    "PromptFile",
    "ResponseCache",
    "RetryPolicy",
    "RetryingCaller",
    "RunFile",
    "ScreenshotGenerator",
    "SentRequest",
    "build_caller",
    "build_generator",
    "build_model",
    "for_protocol",
    "load_prompt_file",
    "load_run_file",
    "opened",
    "postprocess",
    "preset_for",
    "read_record",
    "result_dir",
    "slugify",
    "totals",
    "write_result",
]
