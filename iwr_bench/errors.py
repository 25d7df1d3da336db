"""Errors shared by every layer."""

from __future__ import annotations


class IwrError(Exception):
    """Base class of the errors this package raises on purpose."""


class UserError(IwrError):
    """A mistake the user can fix (bad path, bad file, missing key).

    The CLI prints its message as one line and exits with status 2, without a traceback.
    """
