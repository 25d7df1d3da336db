"""Named factories for pluggable roles (generators, grounders, judges, metrics).

A factory is registered under a role and a name with :func:`register`. Building through
:func:`create` returns the object plus a :class:`Spec` (role, name, arguments) that a run
manifest stores, so the same object can be rebuilt later from the manifest alone.

Example:
    >>> @register("metric", "phash")
    ... def phash_metric(hash_size: int = 16) -> PHashMetric: ...
    >>> metric, spec = create("metric", "phash", hash_size=8)
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from iwr_bench.errors import UserError

F = TypeVar("F", bound=Callable[..., Any])

_FACTORIES: dict[tuple[str, str], Callable[..., Any]] = {}

BUILTIN_MODULES: dict[str, tuple[str, ...]] = {
    "generator": ("iwr_bench.agents.generation",),
    "grounder": ("iwr_bench.agents.grounding", "iwr_bench.agents.grounding_llm"),
    "assertions": ("iwr_bench.agents.judge.assertions", "iwr_bench.agents.judge.llm"),
    "metric": ("iwr_bench.metrics.pair",),
}
"""Modules whose import registers the built-in factories of each role (loaded on first lookup)."""


def _load_builtins(role: str) -> None:
    for module in BUILTIN_MODULES.get(role, ()):
        importlib.import_module(module)


class Spec(BaseModel):
    """How to rebuild a registered object."""

    role: str
    """Role it plays, e.g. ``generator`` or ``grounder``."""
    name: str
    """Registered name within the role."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments given to the factory (JSON-serialisable)."""


def register(role: str, name: str) -> Callable[[F], F]:
    """Decorator registering ``factory`` as ``name`` for ``role``.

    Raises:
        ValueError: when the name is already taken for that role by another factory.
    """

    def decorate(factory: F) -> F:
        key = (role, name)
        existing = _FACTORIES.get(key)
        if existing is not None and existing.__qualname__ != factory.__qualname__:
            raise ValueError(f"{role} {name!r} is already registered by {existing.__qualname__}")
        _FACTORIES[key] = factory
        return factory

    return decorate


def names(role: str) -> list[str]:
    """Registered names for a role, sorted."""
    _load_builtins(role)
    return sorted(n for r, n in _FACTORIES if r == role)


def create(role: str, name: str, **args: Any) -> tuple[Any, Spec]:
    """Build the object registered as ``name`` for ``role``.

    Raises:
        UserError: when nothing is registered under that name, or the arguments do not fit.
    """
    _load_builtins(role)
    factory = _FACTORIES.get((role, name))
    if factory is None:
        known = ", ".join(names(role)) or "none"
        raise UserError(f"unknown {role} {name!r} (known: {known})")
    try:
        inspect.signature(factory).bind(**args)
    except TypeError as exc:
        raise UserError(f"bad arguments for {role} {name!r}: {exc}") from exc
    return factory(**args), Spec(role=role, name=name, args=args)


def rebuild(spec: Spec) -> Any:
    """Build again the object a :class:`Spec` describes."""
    obj, _ = create(spec.role, spec.name, **spec.args)
    return obj
