"""``iwr judge``: replay and score pre-generated pages laid out as the official results tree.

A front over the engine's judging stages (replay, metrics, rubric, record) on pages that already
exist: the limits, the run store (``<out>/run.sqlite``), events, ``--resume`` and ``--tui`` are
those of ``iwr run``; evaluations go to ``<out>/<id>/<model>/eval.json``.
"""

from __future__ import annotations

import argparse
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
    add_judge_options,
    add_limit_options,
    add_metric_options,
    add_plugin_option,
    add_protocol_options,
    run_config,
)
from iwr_bench.dataset.layout import skipped_line
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.layout import (
    RunLayout,
    model_folder,
    model_key,
    mutant_tasks,
    page_models,
    read_evaluations,
)
from iwr_bench.engine.run import Engine
from iwr_bench.engine.setup import load_run_tasks
from iwr_bench.errors import UserError
from iwr_bench.report.fronts import print_judge_summary

__all__ = ["cmd_judge", "model_folder", "model_key", "register"]

_print_summary = print_judge_summary
"""The summary table (kept under its old name)."""


def register(sub: Subparsers) -> None:
    """Add ``iwr judge``."""
    p = sub.add_parser("judge", help="replay and score generated pages (<pages>/<id>/<model>/index.html)")
    p.add_argument("--tasks", type=Path, required=True, help="dataset root, .jsonl file or task folder")
    p.add_argument("--pages", type=Path, required=True, help="results tree with <id>/<model>/index.html")
    p.add_argument("--out", type=Path, required=True, help="where eval.json and evidence go")
    p.add_argument("--only", help="comma-separated task ids to keep")
    p.add_argument(
        "--models",
        metavar="NAME,...",
        help="judge only these model folders (names as under <pages>/<id>/, any spelling)",
    )
    add_plugin_option(p)
    add_judge_options(p)
    add_limit_options(p, models=False)
    add_metric_options(p)
    add_protocol_options(
        p,
        protocol_help="default (ours) or official (the official scripts' rules; implies --settle fixed)",
        settle=True,
    )
    add_skip_invalid(p)
    add_session_flags(p)
    p.set_defaults(func=cmd_judge)


def _config(
    args: argparse.Namespace, models: list[str], own: dict[str, list[int]] | None = None
) -> RunConfig:
    """The run config of a judging session from the options (one line naming a bad one); ``own``:
    the tasks of model folders judged on some tasks only (mutants), by :func:`model_key`."""
    own = own or {}
    return run_config(args, {"models": [{"name": m, "tasks": own.get(model_key(m))} for m in models]})


def _chosen(models: list[str], wanted: str, pages: Path) -> list[str]:
    """The model folders ``--models`` names, in its order (one line naming any not found)."""
    by_key = {model_key(m): m for m in models}
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    missing = [n for n in names if model_key(n) not in by_key]
    if missing or not names:
        raise UserError(
            f"--models: no folder {', '.join(map(repr, missing)) or 'named'} under {pages}/<id>/ "
            f"(found: {', '.join(models)})"
        )
    return list(dict.fromkeys(by_key[model_key(n)] for n in names))


def cmd_judge(args: argparse.Namespace) -> int:
    """Judge every (task, model) page; a missing page scores 0 (default) or is left out (official)."""
    tasks, _source, skipped = load_run_tasks(_config(args, []))
    if not args.pages.is_dir():
        raise UserError(f"{args.pages} is not a folder")
    models = page_models(args.pages, [t.id for t in tasks])
    if not models:
        raise UserError(f"no pages under {args.pages} (expected <id>/<model>/index.html)")
    if args.models:
        models = _chosen(models, args.models, args.pages)
    config = _config(args, models, mutant_tasks(args.pages, [t.id for t in tasks]))
    display = pick_display(args.display, quiet=args.quiet, plugins=config.plugins)
    layout = RunLayout(
        args.out,
        front="judge",
        generate=False,
        pages=args.pages,
        judged=args.out,
        folders={m.slug: m.name for m in config.models},
        any_spelling=True,
        response_cache=None,
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
    slugs = config.model_slugs
    results = read_evaluations(layout, [t.id for t in prepared.tasks], slugs)
    for r in results:
        print(f"task {r.task_id} {r.model}: {r.success_step}/{r.total_step} actions")
    print_judge_summary(results, models, config.protocol, config.official_code)
    if skipped:
        print(skipped_line(len(skipped)))
    return session_end(outcome, "judge", args.out)
