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

    def show(self, path: Path | None) -> None:
        """Draw ``path`` (or a placeholder)."""
        self.path = path
        self._draw()

    def on_resize(self) -> None:
        """Redraw at the new size."""
        self._draw()

    def _draw(self) -> None:
        width, height = self.content_size.width, self.content_size.height
        if self.path is None or width < 2 or height < 1:
            self.update(Text("(none yet)", style="dim"))
            return
        self.update(halfblock(self.path, width, height))


class DiffPane(Static):
    """Where the replay screenshot differs from the reference checkpoint, highlighted."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = "diff"
        self.pair: tuple[Path, Path] | None = None

    def show(self, reference: Path | None, replay: Path | None) -> None:
        """Compare ``replay`` with ``reference`` (a note when either is missing)."""
        self.pair = (reference, replay) if reference is not None and replay is not None else None
        self._draw()

    def on_resize(self) -> None:
        """Redraw at the new size."""
        self._draw()

    def _draw(self) -> None:
        width, height = self.content_size.width, self.content_size.height
        if self.pair is None or width < 2 or height < 2:
            self.update(Text("(no checkpoint for this state)", style="dim"))
            return
        self.update(diff_halfblock(self.pair[0], self.pair[1], width, height))
