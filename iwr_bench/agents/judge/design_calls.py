"""Calls into judge designs, whose code may be anyone's: a design that raises, or answers with the
wrong type, fails the action it was judging as ``judge_error``, named with where its code came from
and with its traceback, and the run goes on. The engine's own signals (a page that failed, a
deadline passed) pass through untouched.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic_ai.exceptions import RunCancelled

from iwr_bench.errors import IwrError, UserError
from iwr_bench.registry import origin_of_module

T = TypeVar("T")

TRACE_CHARS = 6000
"""Longest traceback kept with an action (its last lines: where the design raised)."""

_TORCHVISION_HINT = (
    " (torchvision's compiled operators do not load beside this torch: import it through "
    "iwr_bench.plugins.import_torchvision() before EasyOCR, open_clip or torchvision itself)"
)


class DesignFailed(Exception):
    """A judge design raised, or answered with the wrong type."""

    def __init__(self, message: str, trace: str = "") -> None:
        super().__init__(message)
        self.trace = trace
        """The design's traceback (its last :data:`TRACE_CHARS` characters), if it raised."""


WRAPPER_MARK = "wraps_design"
"""Class attribute (True) of the engine's wrappers around a design, which keep it as ``inner``."""


def _design(obj: Any) -> Any:
    """The design itself under the engine's wrappers (a design's own ``inner`` is its business)."""
    seen = 0
    while getattr(type(obj), WRAPPER_MARK, False) and seen < 8:
        obj, seen = obj.inner, seen + 1
    return obj


def design_label(role: str, obj: Any) -> str:
    """``grounder 'lcs(min_chars=4)' (entry point iwr-lab-examples==0.1)``: what and whose."""
    design = _design(obj)
    name = getattr(design, "name", None) or type(design).__name__
    origin = origin_of_module(type(design).__module__)
    where = origin.label() if origin.kind != "builtin" else f"built in, {type(design).__module__}"
    return f"{role} {name!r} ({where})"


def _passes_through(exc: BaseException) -> bool:
    """The engine's own errors (a failed page, a deadline) and a cancelled model run."""
    return (isinstance(exc, IwrError) and not isinstance(exc, UserError)) or isinstance(exc, RunCancelled)


async def call_design(role: str, obj: Any, call: Callable[[], Awaitable[T]], answers: type[Any]) -> T:
    """Await ``call`` (a call of the design ``obj`` playing ``role``) and check its answer's type.

    Raises:
        DesignFailed: it raised (anything but the engine's own errors), or answered something
            that is not an ``answers``.
    """
    try:
        result = await call()
    except Exception as exc:
        if _passes_through(exc):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        hint = _TORCHVISION_HINT if "torchvision::" in str(exc) else ""
        trace = "".join(traceback.format_exception(exc))[-TRACE_CHARS:]
        message = f"{design_label(role, obj)} raised {type(exc).__name__}: {first}{hint}"
        raise DesignFailed(message, trace) from exc
    if not isinstance(result, answers):
        got = type(result).__name__
        raise DesignFailed(f"{design_label(role, obj)} answered a {got}, not a {answers.__name__}")
    return result
