"""Problems found while loading or validating tasks."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Severity = Literal["error", "warning"]


class Problem(BaseModel):
    """One thing wrong with a task file or folder."""

    severity: Severity
    """``error`` makes the task invalid; ``warning`` is worth a look but does not."""
    task_id: int | None
    """Task the problem belongs to, when it is known."""
    field: str
    """Dotted path of the field or file at fault (e.g. ``action_sequence[2].type``, ``video.mp4``)."""
    message: str
    """What is wrong, in words a user can act on."""
    line: int | None = None
    """1-based line of ``data.jsonl`` the task came from, when there is one."""

    def format(self) -> str:
        """One line: ``error task 12 (line 3) video.mp4: ...``."""
        where = f"task {self.task_id}" if self.task_id is not None else "task ?"
        if self.line is not None:
            where += f" (line {self.line})"
        return f"{self.severity:<7} {where} {self.field}: {self.message}"
