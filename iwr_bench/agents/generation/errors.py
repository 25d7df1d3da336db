"""Errors of the generation layer, and the failure classes a result records."""

from __future__ import annotations

from enum import StrEnum

from iwr_bench.errors import IwrError


class FailureKind(StrEnum):
    """Why a generation produced no model answer (the task is then scored 0, never dropped)."""

    rate_limited = "rate_limited"
    """The provider kept answering 429 after every retry."""
    server_error = "server_error"
    """The provider kept answering 5xx (or was unavailable) after every retry."""
    timeout = "timeout"
    """The request timed out after every retry."""
    connection_error = "connection_error"
    """The provider could not be reached."""
    request_rejected = "request_rejected"
    """The provider refused the request (4xx other than 429: bad request, auth, context size)."""
    malformed_response = "malformed_response"
    """The provider answered something that is not a chat completion."""
    provider_error = "provider_error"
    """Any other error raised by the model client."""
    budget_exhausted = "budget_exhausted"
    """The run's USD budget was spent before this call was made."""
    video_error = "video_error"
    """The task video could not be decoded."""
    no_reference = "no_reference"
    """The oracle baseline found no ``reference/index.html`` in the task folder."""
    empty_page = "empty_page"
    """The model answered with text, but no page was left once the HTML was taken out of it (for
    example HTML on the same line as the opening ```` ```html ```` fence)."""
    internal_error = "internal_error"
    """A bug in our own code, caught at the generation boundary so the run goes on."""


class GenerationError(IwrError):
    """A generation that failed for a recorded reason; the boundary turns it into a result."""

    def __init__(self, kind: FailureKind, message: str, *, attempts: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts


class BudgetExhausted(GenerationError):
    """The USD budget cap was reached; no new call is made."""

    def __init__(self, message: str) -> None:
        super().__init__(FailureKind.budget_exhausted, message)
