"""Errors raised by the browser tools.

Two tiers, as in pydantic-ai: :class:`ToolRetry` is a mistake the calling agent can fix (an index
out of range, a stale element list), and goes back to the model; :class:`PageFailure` is a real
failure of the page or browser (timeout, crash) that ends the job and is recorded as data.
"""

from __future__ import annotations

from typing import Literal

from iwr_bench.errors import IwrError

FailureReason = Literal["timeout", "page_crashed", "browser_crashed", "load_failed", "closed"]
"""Why a page stopped being usable."""


class ToolError(IwrError):
    """Base class of the errors the browser tools raise."""


class ToolRetry(ToolError):
    """Tool misuse the agent can correct (bad index, stale element list, unknown key)."""


COVERED = "covered: "
"""How the message of a :class:`ToolRetry` starts when the element to click or type into lies
under another everywhere on screen (the message, not a subclass, carries it: a Ray worker sends
tool errors back as messages)."""


class PageFailure(ToolError):
    """The page or its browser failed; the page is no longer usable.

    Attributes:
        reason: A short machine-readable cause.
    """

    def __init__(self, reason: FailureReason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason: FailureReason = reason


class BrowserStartError(ToolError):
    """Chromium could not be started or connected to."""
