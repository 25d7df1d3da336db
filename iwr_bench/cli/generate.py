"""``iwr generate``: write one page per task and model into the official results tree."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import anyio
import anyio.to_thread

from iwr_bench.agents.generation import (
    BASELINES,
    Budget,
    GenerationResult,
    Generator,
    ModelConfig,
    ResponseCache,
    RunFile,
    build_generator,
    load_run_file,
    opened,
    totals,
    write_result,
)
from iwr_bench.agents.generation.prompt import load_prompt_file
from iwr_bench.cli._common import Subparsers, add_skip_invalid
from iwr_bench.dataset.layout import Task, load_tasks, unreadable
from iwr_bench.engine.config import generator_design, only_tasks
from iwr_bench.errors import UserError
from iwr_bench.protocol import EvalProtocol
from iwr_bench.registry import build

DEFAULT_CACHE = Path(os.environ.get("IWR_BENCH_CACHE", "~/.cache/iwr-bench/responses")).expanduser()


def register(sub: Subparsers) -> None:
    """Add ``iwr generate``."""
    p = sub.add_parser("generate", help="generate pages with models or baselines")
    p.add_argument("--tasks", type=Path, required=True, help="dataset root, .jsonl file or one task folder")
    p.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="NAME",
        help="pydantic-ai model name (openai:gpt-4o), a [[models]] name from --config, "
        f"a baseline ({', '.join(BASELINES)}), pages:DIR or mutants:NAME; repeatable",
    )
    p.add_argument("--out", type=Path, required=True, help="results folder: <out>/<id>/<model>/index.html")
    p.add_argument("--only", help="comma-separated task ids to keep")
    p.add_argument("--config", type=Path, default=None, help="TOML run file with [[models]] tables")
    p.add_argument("--no-cache", action="store_true", help="always call the model; do not read the cache")
    p.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE, help=f"response cache (default {DEFAULT_CACHE})"
    )
    p.add_argument("--budget", type=float, default=None, metavar="USD", help="stop new model calls past this")
    p.add_argument("--concurrency", type=int, default=4, metavar="N", help="generations at once (default 4)")
    p.add_argument(
        "--asset-base",
        default=None,
        help="what the asset placeholder becomes (default: the path from each page's folder to the "
        "task's assets/ folder, as the official generator writes it)",
    )
    p.add_argument(
        "--protocol",
        choices=[p.value for p in EvalProtocol],
        default=EvalProtocol.default.value,
        help="default: this project's request; official: the official generator's presets, sheets and frames",
    )
    p.add_argument(
        "--prompt-file", type=Path, default=None, metavar="PATH", help="instructions from this file"
    )
    add_skip_invalid(p)
    p.set_defaults(func=cmd_generate)


def build_generators(args: argparse.Namespace, budget: Budget) -> list[Generator]:
    """One generator per ``--model``, all built before any call (so key errors come first).

    Raises:
        UserError: for an unknown model, a missing key or a bad run file.
    """
    run = load_run_file(args.config) if args.config else RunFile()
    cache = None if args.no_cache else ResponseCache(args.cache_dir)
    prompt = load_prompt_file(args.prompt_file) if args.prompt_file else None
    protocol = EvalProtocol(args.protocol)
    generators: list[Generator] = []
    for name in dict.fromkeys(args.model):
        config = run.find(name) or ModelConfig(name=name)
        design = generator_design(config)  # baselines, pages:DIR, mutants:NAME, as `iwr run` reads them
        if design is not None:
            extra = {"asset_base": args.asset_base} if design[0] == "oracle" else {}
            generator, _spec = build("generator", design[0], {**design[1], **extra})
            generators.append(generator)
            continue
        generators.append(
            build_generator(
                config,
                cache=cache,
                budget=budget,
                asset_base=args.asset_base,
                protocol=protocol,
                prompt=prompt,
            )
        )
    return generators


async def run_all(
    tasks: list[Task], generators: list[Generator], out: Path, concurrency: int
) -> list[GenerationResult]:
    """Generate every (task, generator) pair, writing each result as soon as it is done."""
    limiter = anyio.CapacityLimiter(concurrency)
    results: list[GenerationResult] = []

    async def one(task: Task, generator: Generator) -> None:
        async with limiter:
            result = await generator(task)
        await anyio.to_thread.run_sync(write_result, out, result)
        results.append(result)

    async with opened(generators), anyio.create_task_group() as tg:
        for task in tasks:
            for generator in generators:
                tg.start_soon(one, task, generator)
    order = {(t.id, g.name): i for i, (t, g) in enumerate((t, g) for t in tasks for g in generators)}
    return sorted(results, key=lambda r: order.get((r.task_id, r.model), 0))


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate, then print a per-model summary; failed generations are recorded, not fatal."""
    if args.concurrency < 1:
        raise UserError("--concurrency must be at least 1")
    if args.budget is not None and args.budget < 0:
        raise UserError("--budget must not be negative")
    task_set = load_tasks(args.tasks)
    skipped = unreadable(task_set, skip_invalid=args.skip_invalid)
    task_set.tasks = only_tasks(task_set.tasks, args.only, args.tasks)
    if not task_set.tasks:
        raise UserError(f"{args.tasks} holds no readable task (run `iwr tasks validate {args.tasks}`)")
    budget = Budget(args.budget)
    generators = build_generators(args, budget)
    results = anyio.run(run_all, task_set.tasks, generators, args.out, args.concurrency)
    print_summary(results, budget, args.out)
    if skipped:
        print(f"{len(skipped)} task record(s) could not be read and were skipped (--skip-invalid)")
    return 0


def print_summary(results: list[GenerationResult], budget: Budget, out: Path) -> None:
    """One line per model plus the run total."""
    spent = 0.0
    for t in totals(results).values():
        fails = ", ".join(f"{k} {v}" for k, v in sorted(t.failures.items()))
        price = f"${t.cost_usd:.4f}" + (f" (+{t.unpriced} unpriced)" if t.unpriced else "")
        print(
            f"{t.model}: {t.tasks} task(s), {t.ok} ok, {t.failed} failed{f' ({fails})' if fails else ''}, "
            f"{t.cache_hits} cached, {t.input_tokens}+{t.output_tokens} tokens, {price}"
        )
        spent += t.cost_usd
    cap = f" of ${budget.limit_usd:.4f} budget" if budget.limit_usd is not None else ""
    print(f"total: {len(results)} generation(s), ${spent:.4f} spent{cap}; pages under {out}")
