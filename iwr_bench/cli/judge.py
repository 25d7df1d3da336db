"""``iwr judge``: replay and score pre-generated pages laid out as the official results tree."""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from iwr_bench.agents.judge.evaluate import Evaluation, VisualMetrics, evaluate
from iwr_bench.agents.judge.executor import Executor, ExecutorConfig
from iwr_bench.agents.judge.official import aggregate
from iwr_bench.agents.judge.records import undetermined_rate
from iwr_bench.cli._common import Subparsers, add_skip_invalid
from iwr_bench.dataset.layout import Task, load_tasks, unreadable
from iwr_bench.engine.config import JudgeSettings, only_tasks, plugin_refs
from iwr_bench.engine.judges import JudgeSet, build_judges
from iwr_bench.engine.limits import Limits
from iwr_bench.errors import UserError
from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.pair import CachedMetric
from iwr_bench.protocol import EvalProtocol
from iwr_bench.registry import create, load_plugins
from iwr_bench.report.tables import hvs_note
from iwr_bench.tools.models import SettleConfig
from iwr_bench.tools.pool import PagePool, PoolConfig


def register(sub: Subparsers) -> None:
    """Add ``iwr judge``."""
    p = sub.add_parser("judge", help="replay and score generated pages (<pages>/<id>/<model>/index.html)")
    p.add_argument("--tasks", type=Path, required=True, help="dataset root, .jsonl file or task folder")
    p.add_argument("--pages", type=Path, required=True, help="results tree with <id>/<model>/index.html")
    p.add_argument("--out", type=Path, required=True, help="where eval.json and evidence go")
    p.add_argument("--only", help="comma-separated task ids to keep")
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="import this module or .py file first (it registers designs); repeatable",
    )
    p.add_argument(
        "--grounder", default="heuristic", help="grounder: heuristic (default), llm, or any listed"
    )
    p.add_argument("--assertions", default="heuristic", help="assertion judge: heuristic (default), llm, ...")
    p.add_argument("--judge-model", default="", help="model of the llm grounder / assertion judge")
    p.add_argument(
        "--rubric",
        metavar="MODEL",
        default="",
        help="rubric (HVS) judge model; without it HVS is unavailable",
    )
    p.add_argument("--judge-base-url", default="", help="OpenAI-compatible server of the judge model(s)")
    p.add_argument("--judge-api-key-env", default="", help="environment variable with the judge model's key")
    p.add_argument("--votes", type=int, default=1, help="k-vote majority of the llm assertion judge")
    p.add_argument("--retries", type=int, default=2, help="retries of an unusable judge answer (default 2)")
    p.add_argument("--judge-calls", type=int, default=4, help="judge-model requests at once (default 4)")
    p.add_argument("--dino", default="facebook/dinov2-base", help="DINOv2 hub id or local folder")
    p.add_argument("--pages-at-once", type=int, default=2, help="concurrent browser pages (default 2)")
    p.add_argument(
        "--protocol",
        choices=[p.value for p in EvalProtocol],
        default="default",
        help="default (ours) or official (the official scripts' rules; implies --settle fixed)",
    )
    p.add_argument(
        "--settle",
        choices=["stable", "fixed"],
        default=None,
        help="wait for stable screenshots, or the official fixed waits (default: by protocol)",
    )
    p.add_argument("--judge-error-policy", choices=["pass", "fail"], default="fail")
    p.add_argument("--undetermined-policy", choices=["pass", "fail"], default="pass")
    add_skip_invalid(p)
    p.set_defaults(func=cmd_judge)


def model_key(name: str) -> str:
    """The official results-folder name of a model: lower case, ``/`` as ``__``."""
    return name.lower().replace("/", "__")


def _models(pages: Path, tasks: list[Task]) -> list[str]:
    """Model folders under ``<pages>/<id>/``, one per model whichever spelling (ours or lower-case)."""
    found: dict[str, str] = {}
    for t in tasks:
        folder = pages / str(t.id)
        if folder.is_dir():
            for d in sorted(folder.iterdir()):
                if d.is_dir() and not d.name.startswith("."):
                    found.setdefault(model_key(d.name), d.name)
    return sorted(found.values())


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


def cmd_judge(args: argparse.Namespace) -> int:
    """Judge every (task, model) page; a missing page scores 0 (default) or is left out (official)."""
    load_plugins(plugin_refs(args.plugin, Path.cwd()))
    try:
        settings = JudgeSettings.model_validate(
            {
                "grounder": args.grounder,
                "assertions": args.assertions,
                "model": args.judge_model,
                "rubric": args.rubric,
                "base_url": args.judge_base_url,
                "api_key_env": args.judge_api_key_env,
                "votes": args.votes,
                "retries": args.retries,
                "judge_error_policy": args.judge_error_policy,
                "undetermined_policy": args.undetermined_policy,
            }
        )
    except ValidationError as exc:
        raise UserError(f"bad judge options: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from exc
    answers: dict[str, str] = {}
    limits = Limits(
        browser_pages=args.pages_at_once,
        metric_workers=1,
        judge_calls=max(1, args.judge_calls),
        provider_calls={},
        default_provider_calls=4,
    )
    judges = build_judges(
        settings, limits, answers.get, lambda key, role, data: answers.__setitem__(key, data)
    )
    task_set = load_tasks(args.tasks)
    skipped = unreadable(task_set, skip_invalid=args.skip_invalid)
    task_set.tasks = only_tasks(task_set.tasks, args.only, args.tasks)
    if not args.pages.is_dir():
        raise UserError(f"{args.pages} is not a folder")
    models = _models(args.pages, task_set.tasks)
    if not models:
        raise UserError(f"no pages under {args.pages} (expected <id>/<model>/index.html)")
    results = anyio.run(_judge_all, args, task_set.tasks, models, judges)
    _print_summary(results, models, EvalProtocol(args.protocol))
    if skipped:
        print(f"{len(skipped)} task record(s) could not be read and were skipped (--skip-invalid)")
    return 0


async def _judge_all(
    args: argparse.Namespace, tasks: list[Task], models: list[str], judges: JudgeSet
) -> list[Evaluation]:
    ocr, _ = create("metric", "ocr", cache_dir="")  # "": the shared cache in ~/.cache/iwr-bench
    dino, _ = create("metric", "dino", model=args.dino)
    cache = MetricCache.default()
    metrics = VisualMetrics(
        ocr=CachedMetric(ocr, cache), dino=CachedMetric(dino, cache), rubric=judges.rubric
    )
    protocol = EvalProtocol(args.protocol)
    config = ExecutorConfig(
        judge_error_policy=args.judge_error_policy,
        undetermined_policy=args.undetermined_policy,
        protocol=protocol,
    )
    settle = args.settle or ("fixed" if protocol == EvalProtocol.official else "stable")
    results: list[Evaluation] = []
    pool_config = PoolConfig(size=args.pages_at_once, settle=SettleConfig(mode=settle))
    async with judges, PagePool(pool_config) as pool:
        executor = Executor(
            pool, judges.grounder, judges.assertions, config, policy=judges.replay, step=judges.step
        )

        async def one(task: Task, model: str) -> None:
            folder = model_folder(args.pages, task.id, model)
            out = args.out / str(task.id) / model
            replay = await executor.replay(task, folder, out / "evidence")
            results.append(await evaluate(task, model, replay, out / "evidence", out, metrics, protocol))
            print(f"task {task.id} {model}: {replay.success_steps}/{replay.total_steps} actions", flush=True)

        async with anyio.create_task_group() as tg:
            for task in tasks:
                for model in models:
                    tg.start_soon(one, task, model)
    return results


def _undetermined(rows: list[Evaluation]) -> str:
    """The share of a model's judged assertions the judge could not decide."""
    rate = undetermined_rate(
        a.assertion.verdict if a.assertion else None for r in rows for a in r.replay.actions
    )
    return "-" if rate is None else f"{100 * rate:.0f}%"


def _print_summary(results: list[Evaluation], models: list[str], protocol: EvalProtocol) -> None:
    table = Table(title=f"iwr judge (x100, protocol {protocol.value})")
    columns = (
        "model",
        "tasks",
        "IFS",
        "IFS micro",
        "LVS",
        "HVS",
        "VFS",
        "Final",
        "no page",
        "left out",
        "undet.",
    )
    for col in columns:
        table.add_column(col, justify="left" if col == "model" else "right", overflow="fold")
    notes: set[str] = set()
    for model in models:
        rows = [r for r in results if r.model == model]
        missing = [r.replay.failure == "no_page" for r in rows]
        s, left_out, hvs_missing = aggregate(
            [(r.score, m) for r, m in zip(rows, missing, strict=True)], protocol
        )
        if hvs_missing:
            notes.add(hvs_note(protocol))
        if s is None:
            table.add_row(model, "0", *["-"] * 6, str(sum(missing)), str(left_out), _undetermined(rows))
            continue
        table.add_row(
            model,
            str(s.tasks),
            f"{s.ifs:.2f}",
            f"{s.ifs_micro:.2f}",
            f"{s.lvs:.2f}",
            "n/a" if s.hvs is None else f"{s.hvs:.2f}",
            f"{s.vfs:.2f}",
            f"{s.final:.2f}",
            str(sum(missing)),
            str(left_out),
            _undetermined(rows),
        )
    console = Console(width=160)
    console.print(table)
    backends = {b.label for r in results for b in r.backends}
    console.print("backends: " + ", ".join(sorted(backends)))
    if protocol == EvalProtocol.official and any(r.replay.failure == "no_page" for r in results):
        console.print("tasks without index.html are left out of the means (official protocol)")
    for note in sorted(notes):
        console.print(note)
