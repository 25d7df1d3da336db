"""The official results tree: ``<out>/<task id>/<model slug>/index.html`` plus our records."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from iwr_bench.agents.generation.config import slugify
from iwr_bench.agents.generation.postprocess import PLACEHOLDER, resolve_assets
from iwr_bench.agents.generation.records import GenerationResult
from iwr_bench.agents.generation.wrappers import write_atomic
from iwr_bench.protocol import EvalProtocol

PAGE = "index.html"
RAW = "raw.txt"
RECORD = "generation.json"
NOT_PAGE_FILES = frozenset({PAGE, RAW, RECORD, "eval.json", "mutant.json"})
"""Files of a page folder that are records written beside the page, not part of it."""


def result_dir(out: Path, task_id: int, model: str) -> Path:
    """Folder of one generation."""
    return out / str(task_id) / slugify(model)


def relative_assets(folder: Path, assets_dir: Path) -> str:
    """The path from a page's folder to the task's assets folder, as the official generator writes it
    (``os.path.relpath``), with ``/`` separators."""
    return Path(os.path.relpath(assets_dir.absolute(), folder.absolute())).as_posix()


def resolve_page_assets(folder: Path, result: GenerationResult) -> None:
    """Replace the asset placeholder of a page still holding it by the relative path from ``folder``
    to the task's assets; records that path as ``result.asset_base`` (changes ``result`` in place)."""
    if result.asset_base is not None or result.assets_dir is None:
        return
    base = relative_assets(folder, Path(result.assets_dir))
    if result.protocol is EvalProtocol.official:  # plain text, as the official generator does
        result.html = result.html.replace(PLACEHOLDER, base)
    else:
        result.html = resolve_assets(result.html, base)
    result.asset_base = base


def write_result(out: Path, result: GenerationResult) -> Path:
    """Write ``index.html`` (always; empty for a failure), ``raw.txt`` (when the model answered)
    and ``generation.json``; returns the folder.

    A page whose asset placeholder is still unresolved gets the relative path from its folder to the
    task's ``assets/`` (see :func:`resolve_page_assets`).
    """
    folder = result_dir(out, result.task_id, result.folder or result.model)
    folder.mkdir(parents=True, exist_ok=True)
    resolve_page_assets(folder, result)
    # The page's other files at their paths (a bundle, then a mutant's edits over it); index.html
    # is always `html`.
    for layer in (result.page_files, result.page_overlay):
        if layer is not None:
            _copy_page_files(Path(layer), folder)
    write_atomic(folder / PAGE, result.html.encode("utf-8"))
    raw = folder / RAW
    if result.raw is not None:
        write_atomic(raw, result.raw.encode("utf-8"))
    else:
        raw.unlink(missing_ok=True)
    write_atomic(folder / RECORD, result.model_dump_json(indent=2).encode("utf-8"))
    return folder


def _copy_page_files(root: Path, folder: Path) -> None:
    def skip(d: str, names: list[str]) -> list[str]:
        return [n for n in names if n in NOT_PAGE_FILES] if Path(d) == root else []

    shutil.copytree(root, folder, ignore=skip, dirs_exist_ok=True)


def read_record(folder: Path) -> GenerationResult:
    """Read a ``generation.json`` back (the page itself stays in ``index.html``)."""
    return GenerationResult.model_validate_json((folder / RECORD).read_bytes())
