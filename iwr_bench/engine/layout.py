"""What a command runs of the pipeline, and where its pages and evaluations live.

``iwr run`` runs every stage in one run folder (``pages/``, ``judged/``, the store). ``iwr judge``
runs the judging stages on pages that already exist, in an official results tree
(``<pages>/<id>/<model>/index.html``, either spelling of the model folder), and writes
``<out>/<id>/<model>/eval.json``; ``iwr generate`` runs the generate stage alone into a results
tree. All three are the same engine with a different :class:`RunLayout`; the store, the lock and
the events live at the top of the output folder.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from iwr_bench.agents.generation import GenerationResult
from iwr_bench.engine.store import STORE_NAME, RunStore
from iwr_bench.errors import UserError
from iwr_bench.scoring.evaluation import Evaluation

Front = Literal["run", "judge", "generate", "judges eval"]
"""The command a run folder was made by."""


def model_key(name: str) -> str:
    """The official results-folder name of a model: lower case, ``/`` as ``__``."""
    return name.lower().replace("/", "__")


def model_folder(pages: Path, task_id: int, model: str) -> Path | None:
    """The page folder of (task, model) in either spelling, or None when there is none."""
    folder = pages / str(task_id)
    exact = folder / model
    if exact.is_dir():
        return exact
    if folder.is_dir():
        for d in sorted(folder.iterdir()):
            if d.is_dir() and model_key(d.name) == model_key(model):
                return d
    return None


def page_models(pages: Path, task_ids: list[int]) -> list[str]:
    """Model folders under ``<pages>/<id>/``, one per model whichever spelling (ours or lower-case)."""
    found: dict[str, str] = {}
    for task_id in task_ids:
        folder = pages / str(task_id)
        if folder.is_dir():
            for d in sorted(folder.iterdir()):
                if d.is_dir() and not d.name.startswith("."):
                    found.setdefault(model_key(d.name), d.name)
    return sorted(found.values())


def mutant_tasks(pages: Path, task_ids: list[int]) -> dict[str, list[int]]:
    """Model folders that are mutants wherever they occur (each holds ``mutant.json``), by
    :func:`model_key`, with the tasks that have them: a mutant page belongs to its own task and
    is no missing page of the others."""
    seen: dict[str, list[int]] = {}
    plain: set[str] = set()
    for task_id in task_ids:
        folder = pages / str(task_id)
        if folder.is_dir():
            for d in folder.iterdir():
                if d.is_dir() and not d.name.startswith("."):
                    key = model_key(d.name)
                    if (d / "mutant.json").is_file():
                        seen.setdefault(key, []).append(task_id)
                    else:
                        plain.add(key)
    return {key: sorted(ids) for key, ids in seen.items() if key not in plain}


@dataclass(frozen=True)
class RunLayout:
    """Which stages run and where pages, evaluations and the response cache are."""

    run_dir: Path
    """The store, the lock and the control folder."""
    front: Front = "run"
    """The command (recorded in the manifest; a new session replaces only its own kind)."""
    generate: bool = True
    """Run the generate stage (else the pages exist already)."""
    judge: bool = True
    """Run the judging stages (replay, metrics, rubric, record)."""
    pages: Path | None = None
    """Results tree of the pages (``<pages>/<id>/<model>/``); None: ``<run>/pages``."""
    judged: Path | None = None
    """Where ``<id>/<model>/eval.json`` and its evidence go; None: ``<run>/judged``."""
    folders: dict[str, str] = field(default_factory=dict[str, str])
    """Folder name of a model slug when it is not the slug (the judge keeps the folder's spelling)."""
    any_spelling: bool = False
    """Find a page folder in either spelling (ours, or the official lower case)."""
    response_cache: Path | Literal["run"] | None = "run"
    """Answers of generation models: ``run`` (``<run>/cache/responses``), a folder, or None (no cache)."""
    asset_base: str | None = None
    """What the asset placeholder of generated pages becomes (None: the path to the task's assets)."""

    @property
    def pages_root(self) -> Path:
        """Results tree the generate stage writes into and the replay reads from."""
        return self.pages or self.run_dir / "pages"

    @property
    def cache_dir(self) -> Path | None:
        """The response cache folder, or None for none."""
        if self.response_cache == "run":
            return self.run_dir / "cache" / "responses"
        return self.response_cache

    def folder(self, slug: str) -> str:
        """The results-folder name of a model."""
        return self.folders.get(slug, slug)

    def page(self, task_id: int, slug: str) -> Path | None:
        """The pair's page folder, or None when there is none."""
        if self.any_spelling:
            return model_folder(self.pages_root, task_id, self.folder(slug))
        found = self.pages_root / str(task_id) / self.folder(slug)
        return found if found.is_dir() else None

    def judged_dir(self, task_id: int, slug: str, label: str = "") -> Path:
        """Where the pair's eval.json and evidence go (under ``<label>/`` for a design of a run
        that compares several)."""
        folder = (self.judged or self.run_dir / "judged") / str(task_id) / self.folder(slug)
        return folder / label if label else folder


def replace_session(run_dir: Path, front: Front) -> None:
    """Drop the store of an earlier session of the same command (``iwr judge``/``generate`` start over
    unless resumed); a store made by another command is left alone.

    Raises:
        UserError: ``run_dir`` holds a run of another command.
    """
    if not (run_dir / STORE_NAME).exists():
        return
    store = RunStore.open_run(run_dir, readonly=True)
    try:
        made_by = store.manifest().get("front", "run")
    finally:
        store.close()
    if made_by != front:
        raise UserError(f"{run_dir} holds a run of `iwr {made_by}`; give `iwr {front}` another folder")
    for suffix in ("", "-wal", "-shm"):
        (run_dir / f"{STORE_NAME}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(run_dir / "control", ignore_errors=True)


def read_evaluations(layout: RunLayout, task_ids: list[int], slugs: list[str]) -> list[Evaluation]:
    """The evaluations written for these pairs (by task, then model); a pair without one is left out."""
    found: list[Evaluation] = []
    for task_id in task_ids:
        for slug in slugs:
            path = layout.judged_dir(task_id, slug) / "eval.json"
            try:
                found.append(Evaluation.model_validate_json(path.read_bytes()))
            except FileNotFoundError:
                continue
    return found


def generation_results(store: RunStore) -> list[GenerationResult]:
    """The generations recorded in a run's store (by task, then model); a job that ended without
    one (a timeout, a bug) is left out."""
    results: list[GenerationResult] = []
    for job in store.jobs("gen"):
        if job.result is not None:
            try:
                results.append(GenerationResult.model_validate(job.result))
            except ValidationError:
                continue
    return results
