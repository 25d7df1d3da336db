"""Pages as models: judge pages that already exist as if a model had just made them.

- ``pages:DIR`` reads ``DIR/<id>/index.html``, or ``DIR/<id>/<name>/index.html`` when the task
  folder holds exactly one page folder; ``pages:DIR#NAME`` picks ``DIR/<id>/NAME/index.html``.
  So another tool's outputs, an ``iwr generate`` results tree or the official generator's pages
  are run, resumed and reported like any model.
- ``mutants:NAME`` gives the built-in suite's mutant ``NAME`` of each task that has one: the
  task's reference bundle with the files in ``iwr_bench/suites/sample-mutants/<id>/NAME/`` over it.
  ``mutants:DIR#NAME`` does the same with the mutants under ``DIR/<id>/NAME/`` (each holding
  ``mutant.json``): the task's own reference bundle, with the mutant's files over it.

A task with no page gets a failed result (``no_reference``): its page is missing and scores 0.
The asset placeholder of the published pages is resolved as for the oracle (``assets``).
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio.to_thread

from iwr_bench.agents.generation.errors import FailureKind
from iwr_bench.agents.generation.output import NOT_PAGE_FILES
from iwr_bench.agents.generation.records import ErrorInfo, GenerationResult, ImageCounts
from iwr_bench.dataset.layout import REFERENCE_DIR, Task
from iwr_bench.registry import register

SUITE = Path(__file__).resolve().parents[2] / "suites"
MUTANTS = SUITE / "sample-mutants"
"""The built-in suite's mutants: ``<id>/<mutant>/`` holds ``mutant.json`` and the edited files."""


def _find(root: Path, task_id: int, pick: str) -> Path | None:
    folder = root / str(task_id)
    if pick:
        page = folder / pick / "index.html"
        return page if page.is_file() else None
    if (folder / "index.html").is_file():
        return folder / "index.html"
    nested = sorted(folder.glob("*/index.html")) if folder.is_dir() else []
    return nested[0] if len(nested) == 1 else None


class PageFolderGenerator:
    """Serves the page found for each task under a folder (see the module doc)."""

    def __init__(self, name: str, root: Path, pick: str = "") -> None:
        self.name = name
        self.root = root
        self.pick = pick

    def _read(self, task: Task) -> tuple[str | None, str, str | None]:
        """(page HTML, problem, folder of the page's other files when it has any)."""
        page = _find(self.root, task.id, self.pick)
        if page is None:
            where = self.root / str(task.id) / (self.pick or "")
            return None, f"no page for task {task.id} under {where}", None
        try:
            html = page.read_text(encoding="utf-8")  # the placeholder is resolved when written
            others = any(p.name not in NOT_PAGE_FILES for p in page.parent.iterdir())
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"{page}: {exc}", None
        # A multi-file page (a mutant of a recorded site, another tool's bundle) keeps its scripts,
        # stylesheets, fonts and images beside it, as the oracle does.
        return html, "", str(page.parent) if others else None

    async def __call__(self, task: Task) -> GenerationResult:
        """The page as it is; a failed result when the task has none."""
        start = time.monotonic()
        html, problem, files = await anyio.to_thread.run_sync(self._read, task)
        result = GenerationResult(
            task_id=task.id, generator=self.name, model=self.name, images=ImageCounts(video="none")
        )
        if html is None:
            error = ErrorInfo(kind=FailureKind.no_reference, type="FileNotFoundError", message=problem)
            return result.model_copy(
                update={"status": "failed", "error": error, "latency_s": time.monotonic() - start}
            )
        update = {
            "html": html,
            "asset_base": None,  # the writer puts the path from the page's folder to the assets
            "assets_dir": str(task.assets_dir),
            "page_files": files,
            "latency_s": time.monotonic() - start,
        }
        return result.model_copy(update=update)


@register("generator", "pages")
def pages(source: str) -> PageFolderGenerator:
    """Pages from a results tree: ``pages:DIR`` (DIR/<id>/index.html) or ``pages:DIR#NAME``."""
    folder, _, pick = source.partition("#")
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder")
    return PageFolderGenerator(f"pages:{source}", root, pick)


class MutantGenerator(PageFolderGenerator):
    """Mutant ``NAME`` of a folder of mutants: the task's recorded bundle with the mutant's edits
    (a mutant holding a whole page of its own needs no bundle)."""

    def _read(self, task: Task) -> tuple[str | None, str, str | None]:
        mutant = self.root / str(task.id) / self.pick
        reference = task.folder / REFERENCE_DIR
        own = (mutant / "index.html").is_file()
        if not (mutant / "mutant.json").is_file() or not (own or reference.is_dir()):
            where = "the built-in suite has" if self.root == MUTANTS else f"{self.root} holds"
            return None, f"{where} no mutant {self.pick!r} of task {task.id}", None
        page = mutant / "index.html" if own else reference / "index.html"
        try:
            html = page.read_text(encoding="utf-8")  # the placeholder is resolved when written
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"{page}: {exc}", None
        return html, "", str(reference) if reference.is_dir() else None

    async def __call__(self, task: Task) -> GenerationResult:
        """The mutant page: the reference bundle, then the mutant's edited files over it."""
        result = await super().__call__(task)
        if result.status != "ok":
            return result
        return result.model_copy(update={"page_overlay": str(self.root / str(task.id) / self.pick)})


def _root(source: str) -> tuple[Path, str]:
    """(folder of mutants, mutant name) of ``NAME`` (the built-in suite's) or ``DIR#NAME``."""
    folder, hash_, name = source.rpartition("#")
    return (Path(folder).expanduser(), name) if hash_ else (MUTANTS, source)


def mutant_tasks(name: str) -> list[int]:
    """The tasks that have the mutant ``name`` (``NAME`` or ``DIR#NAME``): its only pairs."""
    root, pick = _root(name)
    found = (p.parent.parent.name for p in root.glob(f"*/{pick}/mutant.json"))
    return sorted(int(task) for task in found if task.isdigit())


@register("generator", "mutants")
def mutants(source: str) -> PageFolderGenerator:
    """Mutant pages: ``mutants:NAME`` (the built-in suite's) or ``mutants:DIR#NAME``."""
    root, pick = _root(source)
    known = sorted({p.name for p in root.glob("*/*") if (p / "mutant.json").is_file()})
    if pick not in known:
        where = "the built-in suite" if root == MUTANTS else str(root)
        raise ValueError(f"no mutant {pick!r} in {where} (known: {', '.join(known) or 'none'})")
    return MutantGenerator(f"mutants:{source}", root, pick)
