"""Build the built-in suite: record every source app and write its mutants.

``python -m iwr_bench.suites.build`` (or ``make suite``) records each
``sources/<slug>/site`` with its ``task.yaml`` into ``sample/`` (official layout) and writes
``sample-mutants/<id>/<name>/{index.html,mutant.json}``: the reference page with one
deliberate defect and the first action that must fail because of it. Recording is
deterministic apart from video encoding.
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

from iwr_bench.dataset.recorder import RecordConfig, record, rewrite_references
from iwr_bench.dataset.script import load_script
from iwr_bench.errors import UserError
from iwr_bench.tools.pool import PagePool, PoolConfig

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources"
SAMPLE = HERE / "sample"
MUTANTS = HERE / "sample-mutants"

MutantKind = Literal["handler_removed", "label_changed", "off_by_one", "layout_changed"]


class Replacement(BaseModel):
    """One exact substring replacement in the site's index.html."""

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


def load_mutants(path: Path) -> list[Mutant]:
    """Read a ``mutants.yaml`` file."""
    return TypeAdapter(list[Mutant]).validate_python(yaml.safe_load(path.read_text(encoding="utf-8")))


def apply_mutant(html: str, mutant: Mutant) -> str:
    """Apply every replacement, each of which must match exactly once.

    Raises:
        UserError: when a replacement's ``old`` text is missing or ambiguous.
    """
    for rep in mutant.replace:
        count = html.count(rep.old)
        if count != 1:
            raise UserError(f"mutant {mutant.name}: {rep.old[:60]!r} occurs {count} times (must be once)")
        html = html.replace(rep.old, rep.new)
    return html


def write_mutants(source: Path, task_id: int, mapping: dict[str, str], dest: Path) -> int:
    """Write the mutants of one source app; returns how many."""
    mutants_file = source / "mutants.yaml"
    if not mutants_file.is_file():
        return 0
    html = (source / "site" / "index.html").read_text(encoding="utf-8")
    mutants = load_mutants(mutants_file)
    for mutant in mutants:
        folder = dest / str(task_id) / mutant.name
        folder.mkdir(parents=True, exist_ok=True)
        page = rewrite_references(apply_mutant(html, mutant), mapping)
        (folder / "index.html").write_text(page, encoding="utf-8")
        manifest = mutant.model_dump(exclude={"replace"}) | {"task_id": task_id}
        (folder / "mutant.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
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
    async with PagePool(PoolConfig(size=1, settle=RecordConfig().settle)) as pool:
        for app in apps:
            script = load_script(app / "task.yaml")
            folder = await record(app / "site", script, out, pool=pool)
            mapping = json.loads((out / "asset_maps" / f"{script.id}.json").read_text(encoding="utf-8"))
            shutil.rmtree(mutants_out / str(script.id), ignore_errors=True)
            n = write_mutants(app, script.id, mapping, mutants_out)
            print(
                f"{app.name}: task {script.id} -> {folder.relative_to(out.parent)} ({n} mutants)", flush=True
            )


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
