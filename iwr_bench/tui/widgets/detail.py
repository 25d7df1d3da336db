"""The job detail: trajectory with verdicts, the judge panel, the latest assertion, and the
latest replay screenshot beside its reference checkpoint and the diff of the two."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from iwr_bench.tui.state import JobView
from iwr_bench.tui.widgets.common import pct
from iwr_bench.tui.widgets.images import DiffPane, ImagePane
from iwr_bench.tui.widgets.judge_panel import JudgePanel


def _head(job: JobView, following_active: bool) -> str:
    follow = "  (following the active job; open one from Jobs)" if following_active else ""
    scores = "  ".join(
        f"{name.upper()} {pct(None if job.scores.get(name) is None else 100 * (job.scores[name] or 0))}"
        for name in ("ifs", "vfs", "final")
        if name in job.scores
    )
    step = f"step {job.step}/{job.total or '?'}"
    failure = f"  failure: {job.failure}" if job.failure else ""
    return f"task {job.task_id} / {job.model}  [{job.status}]  {step}  {scores}{failure}{follow}"


def _assertion(job: JobView) -> Text:
    judged = [a for a in job.actions if a.verdict is not None]
    if not judged:
        return Text("no assertion judged yet", style="dim")
    a = judged[-1]
    votes = f" votes {a.votes}" if len(a.votes) > 1 else ""
    colour = {"yes": "green", "no": "red"}.get(a.verdict or "", "yellow")
    text = Text()
    text.append(f"action {a.index + 1}: {a.assertion}\n")
    text.append(f"{a.verdict}{votes}", style=f"bold {colour}")
    text.append(f": {a.reasoning}")
    return text


class DetailView(Vertical):
    """One job in detail (see the module doc)."""

    def compose(self) -> ComposeResult:
        """Head, actions and judge panel, images."""
        yield Static(id="detail-head")
        with Horizontal(id="detail-body"):
            yield DataTable(id="actions", cursor_type="row")
            with Vertical(id="detail-right"):
                yield JudgePanel(id="stream")
                yield Static(id="assertion")
        with Horizontal(id="images"):
            yield ImagePane("replay (latest)", id="shot")
            yield ImagePane("reference checkpoint", id="reference")
            yield DiffPane(id="diff")

    def on_mount(self) -> None:
        """Columns."""
        self.query_one("#actions", DataTable).add_columns("#", "type", "status", "verdict", "description")

    def show(self, job: JobView | None, run_dir: Path, *, following_active: bool) -> None:
        """Redraw for ``job`` (None: no job yet)."""
        head = self.query_one("#detail-head", Static)
        if job is None:
            head.update("no job yet")
            self.query_one(JudgePanel).show(None)
            return
        head.update(_head(job, following_active))
        actions = self.query_one("#actions", DataTable)
        actions.clear()
        for a in job.actions:
            status = a.status if not a.failure else f"{a.status}: {a.failure}"
            actions.add_row(str(a.index + 1), a.type, status, a.verdict or "", a.description)
        if job.actions:
            actions.move_cursor(row=len(job.actions) - 1)
        self.query_one(JudgePanel).show(job)
        self.query_one("#assertion", Static).update(_assertion(job))
        shot = run_dir / job.screenshot if job.screenshot else None
        reference = Path(job.checkpoint) if job.checkpoint else None
        self.query_one("#shot", ImagePane).show(shot)
        self.query_one("#reference", ImagePane).show(reference)
        self.query_one("#diff", DiffPane).show(reference, shot)
