"""Small datasets made of built-in tasks, for tests that need real checkpoints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from iwr_bench.dataset.features import FEATURES_FILE
from iwr_bench.engine.setup import builtin_suite


def sample_copy(dest: Path, ids: tuple[int, ...] = (101, 102), features: bool = False) -> Path:
    """The built-in tasks ``ids`` copied into ``dest`` (official layout), as a downloaded dataset
    is: without the checkpoint features the suite ships (``features``: with them)."""
    suite = builtin_suite()
    lines = [ln for ln in suite.read_text().splitlines() if ln.strip() and json.loads(ln)["id"] in ids]
    (dest / "data").mkdir(parents=True)
    (dest / "data.jsonl").write_text("\n".join(lines) + "\n")
    for task_id in ids:
        ignore = None if features else shutil.ignore_patterns(FEATURES_FILE)
        shutil.copytree(suite.parent / "data" / str(task_id), dest / "data" / str(task_id), ignore=ignore)
    return dest
