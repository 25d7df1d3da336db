"""The views and panes of the terminal UI, each a Textual widget (styles in ``../app.tcss``)."""
