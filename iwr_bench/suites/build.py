"""Build the built-in suite: record every source app and write its mutants.

``python -m iwr_bench.suites.build`` (or ``make suite``) records each
``sources/<slug>/site`` with its ``task.yaml`` into ``sample/`` (official layout), proves each
task on its own oracle (IFS 100, checkpoints >= 0.98, no failed request), and writes
``sample-mutants/<id>/<name>/``: the file(s) the mutant edits, each with one deliberate defect,
plus ``mutant.json`` with the first action that must fail because of it; the mutant page is the
task's reference bundle with those files put over it. Recording is deterministic apart from video encoding.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Literal

import anyio
import yaml
from pydantic import BaseModel, Field, TypeAdapter

from iwr_bench.agents.proof import OracleProver
from iwr_bench.dataset.bundle import MUTANT_RECORD
from iwr_bench.dataset.layout import REFERENCE_DIR
from iwr_bench.dataset.recorder import RecordConfig, RecordError, record
from iwr_bench.dataset.script import load_script
from iwr_bench.errors import UserError
from iwr_bench.tools.pool import PagePool, PoolConfig

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources"
SAMPLE = HERE / "sample"
MUTANTS = HERE / "sample-mutants"

MutantKind = Literal[
    "handler_removed", "label_changed", "off_by_one", "layout_changed", "rule_changed", "hidden_leftovers"
]


class Replacement(BaseModel):
    """One exact substring replacement in one file of the site."""

    file: str = "index.html"
    """Site-relative path of the file to edit (``js/game.js``, ``css/style.css``, ...)."""
    old: str
    """Text to find; it must occur exactly once."""
    new: str
    """Text to put in its place."""


class Mutant(BaseModel):
    """A deliberately broken variant of a reference page."""

    name: str
    """Folder name of the mutant."""
    kind: MutantKind
    """What was broken."""
    description: str
    """What was broken, in words."""
    replace: list[Replacement] = Field(min_length=1)
    """Edits that make the mutant."""
    expected_first_failure: int | None
    """0-based index of the first action that must fail; None when IFS must stay 100."""
    expected_reason: str | None = None
    """Failure class expected at that action (assertion_failed, element_not_found, ...)."""
    known_miss: str | None = None
    """Why the offline judge does not catch this mutant yet (it still counts as judged wrong in
    ``iwr judges eval``; tests leave it out of what they require)."""


def load_mutants(path: Path) -> list[Mutant]:
    """Read a ``mutants.yaml`` file."""
    return TypeAdapter(list[Mutant]).validate_python(yaml.safe_load(path.read_text(encoding="utf-8")))


def apply_mutant(files: dict[str, str], mutant: Mutant) -> dict[str, str]:
    """Apply every replacement to ``files`` (path -> text); each ``old`` must match exactly once.

    Returns the edited files only. Raises:
        UserError: when a named file is missing or a replacement's ``old`` text is missing or ambiguous.
    """
    edited: dict[str, str] = {}
    for rep in mutant.replace:
        if rep.file not in files:
            raise UserError(f"mutant {mutant.name}: {rep.file} is not a file of the recorded site")
        text = edited.get(rep.file, files[rep.file])
        count = text.count(rep.old)
        if count != 1:
            raise UserError(
                f"mutant {mutant.name}: {rep.old[:60]!r} occurs {count} times in {rep.file} (must be once)"
            )
        edited[rep.file] = text.replace(rep.old, rep.new)
    return edited


def write_mutants(source: Path, task_id: int, reference: Path, dest: Path) -> int:
    """Write the mutants of one source app; returns how many.

    A mutant folder holds only the files it edits, at their site paths, and ``mutant.json``; the
    page is the task's reference bundle with those files replaced (:func:`mutant_page`)."""
    mutants_file = source / "mutants.yaml"
    if not mutants_file.is_file():
        return 0
    mutants = load_mutants(mutants_file)
    for mutant in mutants:
        names = {rep.file for rep in mutant.replace}
        files = {n: (reference / n).read_text(encoding="utf-8") for n in names if (reference / n).is_file()}
        edited = apply_mutant(files, mutant)
        folder = dest / str(task_id) / mutant.name
        shutil.rmtree(folder, ignore_errors=True)
        for name, text in edited.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
        manifest = mutant.model_dump(exclude={"replace"}) | {"task_id": task_id, "files": sorted(edited)}
        (folder / MUTANT_RECORD).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return len(mutants)


async def build(sources: Path, out: Path, mutants_out: Path, only: set[str] | None = None) -> None:
    """Record every source app (or those named in ``only``) and write their mutants."""
    apps = sorted(p for p in sources.iterdir() if (p / "task.yaml").is_file())
    if only:
        apps = [p for p in apps if p.name in only]
    if not apps:
        raise UserError(f"no source apps (folders with task.yaml) under {sources}")
    if not only:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(mutants_out, ignore_errors=True)
    prover = OracleProver()
    failed: list[str] = []
    async with PagePool(PoolConfig(size=1, settle=RecordConfig().settle)) as pool:
        for app in apps:
            script = load_script(app / "task.yaml")
            try:
                done = await record(app / "site", script, out, pool=pool, prove=prover)
            except RecordError as exc:
                failed.append(app.name)
                print(f"{app.name}: error: {exc}", file=sys.stderr, flush=True)
                continue
            shutil.rmtree(mutants_out / str(script.id), ignore_errors=True)
            n = write_mutants(app, script.id, done.folder / REFERENCE_DIR, mutants_out)
            proof = done.proof
            low = min(proof.checkpoint_scores.values(), default=1.0) if proof else 1.0
            print(
                f"{app.name}: task {script.id} -> {done.folder.relative_to(out.parent)} ({n} mutants; "
                f"oracle IFS {proof.ifs * 100 if proof else 0:.0f}, lowest checkpoint {low:.3f})",
                flush=True,
            )
            for warning in done.warnings:
                print(f"  warning: {warning}", flush=True)
    if failed:
        raise UserError(f"{len(failed)} source app(s) did not record and prove: {', '.join(failed)}")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: ``python -m iwr_bench.suites.build [--only SLUG ...]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", nargs="*", default=None, help="record only these source apps")
    parser.add_argument("--out", type=Path, default=SAMPLE)
    parser.add_argument("--mutants", type=Path, default=MUTANTS)
    args = parser.parse_args(argv)
    try:
        anyio.run(build, SOURCES, args.out, args.mutants, set(args.only) if args.only else None)
    except UserError as exc:
        print(f"suite: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
