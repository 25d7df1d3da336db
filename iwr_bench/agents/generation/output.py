"""The official results tree: ``<out>/<task id>/<model slug>/index.html`` plus our records."""

from __future__ import annotations

import shutil
from pathlib import Path

from iwr_bench.agents.generation.config import slugify
from iwr_bench.agents.generation.records import GenerationResult
from iwr_bench.agents.generation.wrappers import write_atomic

PAGE = "index.html"
RAW = "raw.txt"
RECORD = "generation.json"


def result_dir(out: Path, task_id: int, model: str) -> Path:
    """Folder of one generation."""
    return out / str(task_id) / slugify(model)


def write_result(out: Path, result: GenerationResult) -> Path:
    """Write ``index.html`` (always; empty for a failure), ``raw.txt`` (when the model answered)
    and ``generation.json``; returns the folder."""
    folder = result_dir(out, result.task_id, result.model)
    folder.mkdir(parents=True, exist_ok=True)
    if result.page_files is not None:  # the page's other files, at their paths; index.html is `html`
        root = Path(result.page_files)

        def skip(d: str, names: list[str]) -> list[str]:
            return [PAGE] if Path(d) == root else []

        shutil.copytree(root, folder, ignore=skip, dirs_exist_ok=True)
    write_atomic(folder / PAGE, result.html.encode("utf-8"))
    raw = folder / RAW
    if result.raw is not None:
        write_atomic(raw, result.raw.encode("utf-8"))
    else:
        raw.unlink(missing_ok=True)
    write_atomic(folder / RECORD, result.model_dump_json(indent=2).encode("utf-8"))
    return folder


def read_record(folder: Path) -> GenerationResult:
    """Read a ``generation.json`` back (the page itself stays in ``index.html``)."""
    return GenerationResult.model_validate_json((folder / RECORD).read_bytes())
