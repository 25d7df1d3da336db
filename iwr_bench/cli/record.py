"""``iwr record``: make a task in the official layout from a site and an action script."""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from iwr_bench.agents.proof import OracleProver
from iwr_bench.cli._common import Subparsers
from iwr_bench.dataset.layout import TaskSet, load_tasks
from iwr_bench.dataset.recorder import OracleProof, RecordConfig, record
from iwr_bench.dataset.script import load_script
from iwr_bench.dataset.validate import validate_task
from iwr_bench.dataset.vendor import VendorSources
from iwr_bench.tools.pool import PagePool, PoolConfig


def register(sub: Subparsers) -> None:
    """Add ``iwr record``."""
    p = sub.add_parser("record", help="record a reference site + action script as a task")
    p.add_argument("site", type=Path, help="folder with the site's index.html and files")
    p.add_argument("script", type=Path, help="action script (YAML or JSON)")
    p.add_argument("--out", type=Path, required=True, help="dataset root to write into")
    p.add_argument("--stem", default="data", help="name of the jsonl file and task folder (default data)")
    p.add_argument("--fps", type=int, default=10, help="video frame rate (default 10)")
    p.add_argument(
        "--min-visual",
        type=float,
        default=0.98,
        help="lowest visual score a checkpoint of the oracle may get against its recording (default 0.98)",
    )
    p.add_argument(
        "--no-features",
        action="store_true",
        help="skip storing the checkpoints' OCR text and embedding (`iwr tasks prepare` can do it later)",
    )
    p.add_argument(
        "--vendor",
        action="append",
        default=[],
        metavar="SOURCE",
        help="where files the site loads from other origins (CDN fonts, icons, scripts) may come from: "
        "a folder (a <host>/<path> mirror, an npm package or node_modules, or the files by name) or "
        "the word 'network'; repeatable. They are copied into the task's vendor/ folder",
    )
    p.set_defaults(func=cmd_record)


def cmd_record(args: argparse.Namespace) -> int:
    """Record one task, prove it on its own oracle, validate it, then store its checkpoints' features
    (computed with a run's default metric designs)."""
    script = load_script(args.script)
    vendor = VendorSources.parse(args.vendor) if args.vendor else None
    prover = OracleProver(min_visual=args.min_visual)
    config = RecordConfig(fps=args.fps)
    print(f"recording task {script.id}: {len(script.actions)} step(s) on {args.site}", flush=True)
    done = anyio.run(
        lambda: record(
            args.site,
            script,
            args.out,
            stem=args.stem,
            config=config,
            prove=prover,
            progress=lambda line: print(line, flush=True),
            vendor=vendor,
        )
    )
    for warning in done.warnings:
        print(f"warning: {warning}")
    task = load_tasks(done.folder).by_id(script.id)
    problems = validate_task(task)
    for p in problems:
        print(p.format())
    counts = f"{len(task.checkpoints)} checkpoints, {len(task.asset_files)} assets"
    print(f"recorded task {script.id} into {done.folder}: {counts}")
    if done.proof is not None:
        print(f"oracle: {describe(done.proof)}")
    if any(p.severity == "error" for p in problems):
        return 1
    if not args.no_features:
        from iwr_bench.cli.prepare import prepare_features
        from iwr_bench.engine.settings import MetricSettings

        prepare_features([task], MetricSettings(), quiet=True)
    return 0


def describe(proof: OracleProof) -> str:
    """One line: IFS, failed requests and the lowest checkpoint score of an oracle proof."""
    low = min(proof.checkpoint_scores.values(), default=1.0)
    return (
        f"IFS {proof.ifs * 100:.0f}, {len(proof.failed_requests)} failed request(s), "
        f"lowest checkpoint score {low:.3f} over {len(proof.checkpoint_scores)}"
    )


async def prove_all(task_set: TaskSet) -> list[tuple[int, OracleProof | None]]:
    """The oracle proof of every task of ``task_set`` (None for a task without a reference page)."""
    prover = OracleProver()
    out: list[tuple[int, OracleProof | None]] = []
    async with PagePool(PoolConfig(size=1, settle=RecordConfig().settle)) as pool:
        for task in task_set.tasks:
            out.append((task.id, await prover(task, pool) if task.reference_page is not None else None))
    return out


def print_proofs(task_set: TaskSet) -> int:
    """``iwr tasks validate --replay``: judge each reference page offline; returns the error count."""
    errors = 0
    for task_id, proof in anyio.run(prove_all, task_set):
        if proof is None:
            print(f"task {task_id}: no reference page to replay")
            continue
        errors += len(proof.problems)
        for problem in proof.problems:
            print(f"task {task_id}: error: oracle: {problem}")
        if not proof.problems:
            print(f"task {task_id}: oracle proves itself: {describe(proof)}")
    return errors
