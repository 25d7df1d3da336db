"""Helpers shared by the sub-command modules."""

from __future__ import annotations

import argparse
from typing import TypeAlias

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # pyright: ignore[reportPrivateUsage]
"""The object ``add_subparsers`` returns; each command module's ``register`` receives it."""
