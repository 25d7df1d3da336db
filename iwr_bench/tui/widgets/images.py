"""Screenshots in half blocks: an image pane, and the diff pane that shows where two differ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.widgets import Static

from iwr_bench.tui.image import diff_halfblock, halfblock


class ImagePane(Static):
    """A screenshot drawn in half blocks, fitted to the pane."""

    def __init__(self, title: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = title
        self.path: Path | None = None

    def show(self, path: Path | None, title: str | None = None) -> None:
        """Draw ``path`` (or a placeholder), under ``title`` when given."""
        self.path = path
        if title is not None:
            self.border_title = title
        self._draw()

    def on_resize(self) -> None:
        """Redraw at the new size."""
        self._draw()

    def _draw(self) -> None:
        width, height = self.content_size.width, self.content_size.height
        if self.path is None or width < 2 or height < 1:
            self.update(Text("(none)", style="dim"))
        elif not self.path.is_file():
            self.update(Text(f"(not on disk: {self.path.name})", style="dim"))
        else:
            self.update(halfblock(self.path, width, height))


class DiffPane(Static):
    """Where one screenshot differs from another (a replay from its reference checkpoint, or the
    state after an action from the state before it), highlighted over the first, faded."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = "diff"
        self.pair: tuple[Path, Path] | None = None

    def show(self, first: Path | None, second: Path | None, title: str = "diff") -> None:
        """Compare ``second`` with ``first`` (a note when either is missing)."""
        self.pair = (first, second) if first is not None and second is not None else None
        self.border_title = title if self.pair is not None else "diff"
        self._draw()

    def on_resize(self) -> None:
        """Redraw at the new size."""
        self._draw()

    def _draw(self) -> None:
        width, height = self.content_size.width, self.content_size.height
        if self.pair is None or width < 2 or height < 2:
            self.update(Text("(nothing to compare)", style="dim"))
            return
        self.update(diff_halfblock(self.pair[0], self.pair[1], width, height))
