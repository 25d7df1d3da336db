"""The question asked when quitting (``q``, Ctrl-C) while the app's own run is still going."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

QUESTION = "The run is still going. Stop it and quit? It stays resumable with iwr run --resume."


class ConfirmStop(ModalScreen[bool]):
    """Stop the run and quit, or keep watching."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Stop the run"),
        Binding("n,escape", "answer(False)", "Keep watching"),
    ]

    def compose(self) -> ComposeResult:
        """A question and two buttons."""
        with Vertical():
            yield Label(QUESTION)  # wraps to the dialog's width (app.tcss)
            with Horizontal():
                yield Button("Stop and quit (y)", id="stop", variant="error")
                yield Button("Keep watching (n)", id="keep", variant="primary")

    def action_answer(self, stop: bool) -> None:
        """Close with the answer."""
        self.dismiss(stop)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "stop")
