"""Browser sandbox and the tools agents use to act on pages."""
