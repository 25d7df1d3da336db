"""Build the pydantic-ai model a :class:`ModelConfig` names, checking keys and extras first."""

from __future__ import annotations

import os
from typing import Any

from pydantic_ai.exceptions import UserError as PydanticAIUserError
from pydantic_ai.models import Model, infer_model
from pydantic_ai.providers import Provider, infer_provider_class

from iwr_bench.agents.generation.config import ModelConfig
from iwr_bench.agents.generation.wire import record_requests
from iwr_bench.agents.scripted_model import PROVIDER as SCRIPTED_PROVIDER
from iwr_bench.agents.scripted_model import scripted_model
from iwr_bench.errors import UserError

# Older or friendlier provider prefixes, mapped to the names pydantic-ai 2.x knows.
ALIASES = {"google-gla": "google", "google-vertex": "google-cloud", "gemini": "google"}

# The environment variable each key-based provider reads by default.
KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GOOGLE_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "xai": "XAI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "together": "TOGETHER_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
}
_EXTRA = {"google": "google", "google-cloud": "google", "openrouter": "openrouter", "bedrock": "bedrock"}

# Model classes that send a video part; every other class gets frames as images.
_VIDEO_CLASSES = frozenset({"GoogleModel", "OpenRouterModel", "BedrockConverseModel"})


def model_name(config: ModelConfig) -> str:
    """The pydantic-ai model name, with aliases resolved."""
    provider = config.provider
    if provider in ALIASES:
        return f"{ALIASES[provider]}:{config.name.split(':', 1)[1]}"
    return config.name


def api_key(config: ModelConfig) -> str | None:
    """The API key to use, read from the environment.

    Raises:
        UserError: when the variable the model needs is not set.
    """
    provider = ALIASES.get(config.provider or "", config.provider)
    env = config.api_key_env or (None if config.base_url else KEY_ENV.get(provider or ""))
    if env is None:
        return None
    value = os.environ.get(env)
    if not value and provider == "google" and not config.api_key_env:
        value = os.environ.get("GEMINI_API_KEY")
    if not value:
        raise UserError(f"model {config.name!r} needs an API key: set the environment variable {env}")
    return value


OFFICIAL_WIRE_PROVIDERS = frozenset({"openai", "openai-chat", "openai-responses"})
"""Providers whose models go over Chat Completions under ``--protocol official``, as the official
generator's OpenAI client sends every request (other providers keep their own API)."""


def build_model(config: ModelConfig, *, official: bool = False) -> Model:
    """The pydantic-ai model for ``config``; nothing is requested yet.

    ``official``: the request the official generator sends, for a ``base_url`` server or an OpenAI
    model: Chat Completions (not the Responses API), with the token limit as ``max_tokens`` (not
    ``max_completion_tokens``, which older OpenAI-compatible servers ignore).

    ``test:`` (and ``test:OPTIONS``, with no ``base_url``) is the built-in scripted judge model of
    :mod:`iwr_bench.agents.scripted_model`: no key, no network, no price.

    Raises:
        UserError: for an unknown provider, a provider whose extra is not installed, or a missing key.
    """
    if config.provider == SCRIPTED_PROVIDER and not config.base_url:
        return scripted_model(config.name.split(":", 1)[1])
    key = api_key(config)
    wire: dict[str, Any] | None = {"openai_chat_supports_max_completion_tokens": False} if official else None
    if config.base_url:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=config.base_url, api_key=key or "not-needed")
        record_requests(provider)
        return OpenAIChatModel(config.server_model_id, provider=provider, profile=wire)  # type: ignore[arg-type]
    name = model_name(config)
    if official and config.provider in OFFICIAL_WIRE_PROVIDERS:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(api_key=key) if key is not None else OpenAIProvider()
        record_requests(provider)
        return OpenAIChatModel(name.split(":", 1)[1], provider=provider, profile=wire)  # type: ignore[arg-type]
    if ":" not in name:
        raise UserError(
            f"model {config.name!r} has no provider prefix: write it as provider:model "
            f"(e.g. openai:gpt-4o), or give base_url for an OpenAI-compatible server"
        )
    provider_name = name.split(":", 1)[0]

    def factory(pname: str) -> Provider[Any]:
        cls: Any = infer_provider_class(pname)
        provider: Provider[Any] = cls(api_key=key) if key is not None else cls()
        record_requests(provider)
        return provider

    try:
        return infer_model(name, provider_factory=factory)
    except ImportError as exc:
        extra = _EXTRA.get(provider_name, provider_name)
        raise UserError(
            f"model {config.name!r}: the {provider_name} provider is not installed "
            f'(pip install "pydantic-ai-slim[{extra}]"): {exc}'
        ) from exc
    except (PydanticAIUserError, ValueError) as exc:
        raise UserError(f"model {config.name!r}: {exc}") from exc


def accepts_video(model: Model) -> bool:
    """Whether this model class sends ``video/mp4`` parts (Google, OpenRouter, Bedrock)."""
    return any(cls.__name__ in _VIDEO_CLASSES for cls in type(model).__mro__)
