"""``iwr generate``: write one page per task and model into the official results tree.

A front over the engine's generate stage alone: provider limits, the budget, the response cache,
the run store (``<out>/run.sqlite``), events, ``--resume`` and ``--tui`` are those of ``iwr run``;
pages go to ``<out>/<id>/<model>/index.html``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from iwr_bench.cli._common import (
    Subparsers,
    add_session_flags,
    add_skip_invalid,
    drive,
    pick_display,
    session_end,
)
from iwr_bench.cli.options import (
    add_budget_option,
    add_protocol_options,
    check_options,
    defaults,
    model_entries,
    run_config,
)
from iwr_bench.dataset.layout import skipped_line
from iwr_bench.engine.config import RunConfig, load_run_config
from iwr_bench.engine.layout import RunLayout, generation_results
from iwr_bench.engine.run import Engine
from iwr_bench.report.fronts import print_generation_summary

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
        "a baseline (oracle, screenshot, blank), pages:DIR or mutants:NAME; repeatable",
    )
    p.add_argument("--out", type=Path, required=True, help="results folder: <out>/<id>/<model>/index.html")
    p.add_argument("--only", help="comma-separated task ids to keep")
    p.add_argument("--config", type=Path, default=None, help="TOML run file with [[models]] tables")
    p.add_argument("--no-cache", action="store_true", help="always call the model; do not read the cache")
    p.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE, help=f"response cache (default {DEFAULT_CACHE})"
    )
    add_budget_option(p)
    p.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help=f"model requests at once per provider (default {defaults().limits.model_calls})",
    )
    p.add_argument(
        "--asset-base",
        default=None,
        help="what the asset placeholder becomes (default: the path from each page's folder to the "
        "task's assets/ folder, as the official generator writes it)",
    )
    add_protocol_options(
        p,
        protocol_help="default: this project's request; official: the official generator's presets, "
        "sheets and frames",
        prompt_file=True,
    )
    add_skip_invalid(p)
    add_session_flags(p)
    p.set_defaults(func=cmd_generate)


def _config(args: argparse.Namespace) -> RunConfig:
    """The run config of a generation session: the ``--model`` entries (as configured in ``--config``)."""
    check_options(args)
    known = load_run_config(args.config).models if args.config else []
    return run_config(args, {"models": model_entries(args.model, known)})


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate, then print a per-model summary; failed generations are recorded, not fatal."""
    config = _config(args)
    display = pick_display(args.display, quiet=args.quiet, plugins=config.plugins)
    layout = RunLayout(
        args.out,
        front="generate",
        judge=False,
        pages=args.out,
        response_cache=None if args.no_cache else args.cache_dir,
        asset_base=args.asset_base,
    )
    engine = Engine(
        config,
        args.out,
        resume=args.resume,
        retry_failed=args.retry_failed,
        layout=layout,
        accept_changed_plugins=args.accept_changed_plugins,
    )
    prepared = engine.prepare()
    outcome = drive(engine, display)
    print_generation_summary(generation_results(prepared.store), prepared.budget, args.out)
    if prepared.skipped:
        print(skipped_line(len(prepared.skipped)))
    return session_end(outcome, "generate", args.out)
