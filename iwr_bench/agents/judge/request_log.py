"""What each judging call of a replay was asked and answered, kept beside its evidence.

Every grounder and assertion-judge call of a replay adds one line to
``<evidence>/judge_requests.jsonl.gz`` (gzip members, one per line, so a killed replay keeps the
lines written before): the role, the action, the request (its images as the evidence files that
hold them) and the answer. ``iwr judges replay`` (:mod:`iwr_bench.report.judge_replay`) reads
them back and asks other designs the same questions, with no browser.

A request whose screenshot was taken for the grounder alone is written as ``ground_<i>.png``; the
assertion's before and after screenshots are the replay's own ``step_<i>.png`` files, and the
task's checkpoint is named by its path.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from iwr_bench.agents.grounding import Grounding, GroundingRequest
from iwr_bench.agents.judge.records import AssertionRequest, AssertionVerdict
from iwr_bench.errors import UserError

LOG_NAME = "judge_requests.jsonl.gz"
"""File name of the log, in a replay's evidence folder."""


class LoggedCall(BaseModel):
    """One line of the log."""

    role: Literal["grounder", "assertions"]
    """Which judging role was asked."""
    index: int
    """0-based action index."""
    request: dict[str, Any]
    """The request without its images (see the file fields)."""
    answer: dict[str, Any]
    """The answer (a ``Grounding`` or an ``AssertionVerdict``)."""
    screenshot: str | None = None
    """Grounder: evidence file of the screenshot it was given."""
    before: str | None = None
    """Assertion: evidence file of the screen before the action."""
    after: str | None = None
    """Assertion: evidence file of the screen after it."""
    recorded: str | None = None
    """Assertion: path of the task's checkpoint it was given."""


def _append(evidence: Path, call: LoggedCall) -> None:
    with gzip.open(evidence / LOG_NAME, "ab") as out:
        out.write(call.model_dump_json().encode() + b"\n")


def log_grounding(evidence: Path, index: int, request: GroundingRequest, answer: Grounding) -> None:
    """Keep a grounder call (its screenshot, if any, as ``ground_<index>.png``)."""
    shot = None
    if request.screenshot is not None:
        shot = f"ground_{index}.png"
        (evidence / shot).write_bytes(request.screenshot)
    data = request.model_dump(mode="json", exclude={"screenshot"})
    _append(
        evidence,
        LoggedCall(
            role="grounder", index=index, request=data, answer=answer.model_dump(mode="json"), screenshot=shot
        ),
    )


def log_assertion(
    evidence: Path,
    index: int,
    request: AssertionRequest,
    answer: AssertionVerdict,
    files: tuple[str, str, Path | None],
) -> None:
    """Keep an assertion-judge call; ``files``: the before and after evidence files, the checkpoint."""
    before, after, recorded = files
    data = request.model_dump(mode="json", exclude={"before_png", "after_png", "recorded_png"})
    _append(
        evidence,
        LoggedCall(
            role="assertions",
            index=index,
            request=data,
            answer=answer.model_dump(mode="json"),
            before=before,
            after=after,
            recorded=str(recorded) if recorded is not None else None,
        ),
    )


def read_log(evidence: Path) -> Iterator[LoggedCall]:
    """The calls of one replay, in order (a line cut off by a kill is left out).

    Raises:
        UserError: the log is not one (a line that is not a logged call).
    """
    path = evidence / LOG_NAME
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for n, line in enumerate(lines, 1):
                if not line.endswith("\n"):
                    return  # the last line of a replay that was killed while writing it
                try:
                    yield LoggedCall.model_validate(json.loads(line))
                except (json.JSONDecodeError, ValidationError) as exc:
                    raise UserError(f"{path}:{n}: not a logged judge call") from exc
    except EOFError:  # a gzip member cut off by a kill: the lines before it stand
        return
    except (OSError, gzip.BadGzipFile) as exc:
        raise UserError(f"{path}: cannot read it ({exc})") from exc


def grounding_request(call: LoggedCall, evidence: Path) -> GroundingRequest:
    """The logged grounder request, its screenshot read back."""
    shot = (evidence / call.screenshot).read_bytes() if call.screenshot else None
    return GroundingRequest.model_validate({**call.request, "screenshot": shot})


def assertion_request(call: LoggedCall, evidence: Path) -> AssertionRequest:
    """The logged assertion request, its screenshots (and the checkpoint, if still there) read back."""
    recorded = Path(call.recorded) if call.recorded else None
    return AssertionRequest.model_validate(
        {
            **call.request,
            "before_png": (evidence / (call.before or "")).read_bytes(),
            "after_png": (evidence / (call.after or "")).read_bytes(),
            "recorded_png": recorded.read_bytes() if recorded is not None and recorded.is_file() else None,
        }
    )
