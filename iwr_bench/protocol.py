"""Which evaluation protocol a run follows: this project's defaults, or the official scripts' rules.

``default`` is the protocol described in ``protocol.md`` sections 1-5 (scores a page that is
missing as 0, waits for pages to settle, pairs a flagged action with the state after it).
``official`` reproduces the authors' scripts rule for rule (``protocol.md`` section 6), so that
numbers can sit next to the published leaderboard. The manifest of every run records it, and
reports never subtract a run of one protocol from a run of the other.
"""

from __future__ import annotations

from enum import StrEnum


class EvalProtocol(StrEnum):
    """The evaluation protocol of a run."""

    default = "default"
    """This project's protocol (settled waits, missing pages scored 0, post-action pairs)."""
    official = "official"
    """The official scripts' behaviour, rule for rule (protocol.md section 6)."""
