"""The order the workers take the test files in names files that exist."""

from __future__ import annotations

from pathlib import Path

from heaviest_first import HEAVIEST_FIRST

ROOT = Path(__file__).resolve().parent.parent


def test_every_file_named_heaviest_first_exists() -> None:
    missing = [path for path in HEAVIEST_FIRST if not (ROOT / path).is_file()]
    assert missing == [], f"renamed or removed: update tests/heaviest_first.py: {missing}"
    assert len(set(HEAVIEST_FIRST)) == len(HEAVIEST_FIRST)
