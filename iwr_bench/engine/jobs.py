"""The units of work: one generation, or one judging, of a (task, model) pair.

A job is plain data (:class:`GenerateJob`, :class:`JudgeJob`): it names its inputs by path and
content digest and its outputs by folder, so it can be serialised and shipped to a worker on
another machine. Its stages hand each other data too (a page folder, a
:class:`~iwr_bench.agents.judge.records.Replay` and its evidence folder, the measured pairs), never
live objects, so each stage can run where its resource is.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import anyio.to_thread
from pydantic import BaseModel

from iwr_bench.agents.generation import GenerationResult, Generator, write_result
from iwr_bench.agents.generation.output import PAGE
from iwr_bench.dataset.layout import Task


class GenerateJob(BaseModel):
    """Generate the page of one task with one model."""

    kind: Literal["generate"] = "generate"
    id: str
    """Job id (``gen/<task>/<model>``)."""
    task_id: int
    """Task id."""
    task_dir: str
    """The task's folder (video, assets, sheets)."""
    record_sha256: str
    """Digest of the task record the page is generated from."""
    model: str
    """Model (results-folder slug)."""
    pages_root: str
    """Results tree the page is written into (``<root>/<task>/<model>/index.html``)."""


class JudgeJob(BaseModel):
    """Replay and score one generated page."""

    kind: Literal["judge"] = "judge"
    id: str
    """Job id (``judge/<task>/<model>``)."""
    task_id: int
    """Task id."""
    task_dir: str
    """The task's folder (checkpoints, assets)."""
    record_sha256: str
    """Digest of the task record whose actions are replayed."""
    model: str
    """Model (results-folder slug)."""
    page: str
    """Folder with the page's ``index.html``."""
    page_sha256: str | None
    """Digest of ``index.html`` (None when there is no page)."""
    out: str
    """Folder for ``eval.json``, ``evalpoints/`` and ``evidence/``."""


def record_digest(task: Task) -> str:
    """Digest of a task's record (what its actions and checkpoints mean)."""
    return hashlib.sha256(task.record.model_dump_json().encode()).hexdigest()


def page_digest(folder: Path) -> str | None:
    """Digest of a page's ``index.html``, or None when there is none."""
    page = folder / PAGE
    return hashlib.sha256(page.read_bytes()).hexdigest() if page.is_file() else None


async def execute_generate(job: GenerateJob, task: Task, generator: Generator) -> GenerationResult:
    """Generate and write the page (the files exist before this returns)."""
    result = await generator(task)
    await anyio.to_thread.run_sync(write_result, Path(job.pages_root), result)
    return result
