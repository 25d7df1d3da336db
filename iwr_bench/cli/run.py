"""``iwr run`` (the main command) and ``iwr runs show``."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Generator
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from iwr_bench.cli._common import Subparsers, add_skip_invalid
from iwr_bench.engine.config import RunConfig, load_run_config, parse_run_config, plugin_refs
from iwr_bench.engine.lock import RunLock
from iwr_bench.engine.progress import LiveProgress, PlainProgress
from iwr_bench.engine.run import Engine, RunOutcome, run_summary
from iwr_bench.engine.store import STORE_NAME, RunStore
from iwr_bench.engine.summary import substitute_lines
from iwr_bench.errors import UserError
from iwr_bench.registry import reload_recorded


def register(sub: Subparsers) -> None:
    """Add ``iwr run`` and ``iwr runs``."""
    p = sub.add_parser(
        "run",
        help="generate and judge every (task, model) pair, resumably (no options: the offline demo)",
        description="With no options: the built-in suite, baselines oracle/screenshot/blank, offline judges.",
    )
    p.add_argument("-c", "--config", type=Path, help="TOML run file (see README: Run files)")
    p.add_argument("--tasks", help="dataset root, .jsonl file or task folder (default: the built-in suite)")
    p.add_argument("--only", help="comma-separated task ids to keep")
    p.add_argument("--model", action="append", metavar="NAME", help="model or baseline; repeatable")
    p.add_argument("--out", type=Path, help="run folder (default runs/<UTC time>)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a stopped run")
    p.add_argument("--retry-failed", action="store_true", help="on resume, also redo jobs that failed")
    p.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE_OR_FILE",
        help="import this module or .py file first (it registers designs); repeatable",
    )
    p.add_argument("--grounder", help="grounder: heuristic (default), llm, or any from `iwr judges list`")
    p.add_argument("--assertions", help="assertion judge: heuristic (default), llm, or any listed")
    p.add_argument("--judge-model", help="model of the llm grounder / assertion judge")
    p.add_argument(
        "--rubric", metavar="MODEL", help="rubric (HVS) judge model; without it HVS is unavailable"
    )
    p.add_argument("--judge-base-url", help="OpenAI-compatible server of the judge model(s)")
    p.add_argument("--judge-api-key-env", help="environment variable with the judge model's key")
    p.add_argument("--votes", type=int, help="k-vote majority of the llm assertion judge")
    p.add_argument("--judge-error-policy", choices=["pass", "fail"])
    p.add_argument("--undetermined-policy", choices=["pass", "fail"])
    p.add_argument("--pages-at-once", type=int, metavar="N", help="browser pages at once (default 2)")
    p.add_argument("--metric-workers", type=int, metavar="N", help="metric batches at once (default 1)")
    p.add_argument("--judge-calls", type=int, metavar="N", help="judge-model requests at once (default 4)")
    p.add_argument("--model-calls", type=int, metavar="N", help="generation requests at once per provider")
    p.add_argument("--dino", help="DINOv2 hub id or local folder")
    p.add_argument("--no-metric-cache", action="store_true", help="do not reuse metric values across runs")
    p.add_argument("--budget", type=float, metavar="USD", help="stop new paid generation calls past this")
    p.add_argument(
        "--protocol",
        choices=["default", "official"],
        help="evaluation protocol: this project's (default) or the official scripts' rules",
    )
    p.add_argument("--prompt-file", metavar="PATH", help="generation instructions from this file")
    add_skip_invalid(p)
    p.add_argument(
        "--backend", choices=["in-process", "ray"], help="where replay and metrics run (default in-process)"
    )
    p.add_argument("--address", metavar="HOST:PORT", help="with --backend ray: join this Ray cluster")
    p.add_argument("--tui", action="store_true", help="watch the run in the terminal UI")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--quiet", action="store_true", help="no progress, only the final line")
    out.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.set_defaults(func=cmd_run)

    runs = sub.add_parser("runs", help="inspect run folders")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, metavar="COMMAND")
    show = runs_sub.add_parser("show", help="manifest, status and summary of a run")
    show.add_argument("run_dir", type=Path)
    show.add_argument("--json", action="store_true", help="everything as JSON")
    show.set_defaults(func=cmd_runs_show)

    watch = sub.add_parser("watch", help="follow a run (in progress or finished) in the terminal UI")
    watch.add_argument("run_dir", type=Path)
    watch.set_defaults(func=cmd_watch)


def _positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise UserError(f"{name} must be at least 1")


def build_config(args: argparse.Namespace) -> RunConfig:
    """The run config: the run file (if any), then the command-line options over it.

    Raises:
        UserError: a bad run file or option.
    """
    for name in ("pages_at_once", "metric_workers", "judge_calls", "model_calls", "votes"):
        _positive("--" + name.replace("_", "-"), getattr(args, name))
    base = load_run_config(args.config) if args.config else RunConfig()
    data: dict[str, Any] = base.model_dump(mode="json")
    # A model keeps only the settings its table gave: the official preset fills the others.
    data["models"] = [m.model_dump(mode="json", exclude_unset=True) for m in base.models]
    if args.tasks:
        data["tasks"] = args.tasks
    if args.only:
        try:
            data["only"] = [int(x) for x in args.only.split(",") if x.strip()]
        except ValueError as exc:
            raise UserError(f"--only takes comma-separated task ids, not {args.only!r}") from exc
    if args.model:
        known = {m.name: m for m in base.models}
        data["models"] = [
            known[n].model_dump(mode="json", exclude_unset=True) if n in known else {"name": n}
            for n in dict.fromkeys(args.model)
        ]
    judge = data["judge"]
    for opt, key in (
        ("grounder", "grounder"),
        ("assertions", "assertions"),
        ("judge_model", "model"),
        ("rubric", "rubric"),
        ("judge_base_url", "base_url"),
        ("judge_api_key_env", "api_key_env"),
        ("votes", "votes"),
        ("judge_error_policy", "judge_error_policy"),
        ("undetermined_policy", "undetermined_policy"),
    ):
        value = getattr(args, opt)
        if value is not None and not (isinstance(judge[key], dict) and judge[key].get("name") == value):
            judge[key] = value  # a role named again on the command line keeps its run-file options
    limits = data["limits"]
    for opt, key in (
        ("pages_at_once", "browser_pages"),
        ("metric_workers", "metric_workers"),
        ("judge_calls", "judge_calls"),
        ("model_calls", "model_calls"),
    ):
        if getattr(args, opt) is not None:
            limits[key] = getattr(args, opt)
    if args.dino:
        data["metrics"]["dino"] = args.dino
    if args.no_metric_cache:
        data["metrics"]["cache"] = False
    if args.protocol:
        data["protocol"] = args.protocol
    if args.prompt_file:
        data["prompt_file"] = args.prompt_file
    if args.skip_invalid:
        data["skip_invalid"] = True
    if args.plugin:
        extra = plugin_refs(args.plugin, Path.cwd())
        data["plugins"] = [*data["plugins"], *(r for r in extra if r not in data["plugins"])]
    if args.budget is not None:
        if args.budget < 0:
            raise UserError("--budget must not be negative")
        data["budget_usd"] = args.budget
    data["backend"] = _backend(args, data["backend"])
    return parse_run_config(data, str(args.config) if args.config else "options")


def _backend(args: argparse.Namespace, current: dict[str, Any]) -> dict[str, Any]:
    """``[backend]`` with ``--backend``/``--address`` over it (both also apply to ``--resume``)."""
    if args.address and (args.backend or current.get("kind")) != "ray":
        raise UserError("--address joins a Ray cluster: add --backend ray")
    out = dict(current)
    if args.backend:
        out["kind"] = args.backend
    if args.address:
        out["address"] = args.address
    return out


def _run_dir(args: argparse.Namespace, config: RunConfig) -> Path:
    if args.out:
        return args.out
    if config.out:
        return Path(config.out).expanduser()
    return Path("runs") / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def _resumed_config(run_dir: Path, plugins: list[str] | None = None) -> RunConfig:
    store = RunStore.open_run(run_dir, readonly=True)
    try:
        manifest = store.manifest()
    finally:
        store.close()
    front = manifest.get("front", "run")
    if front != "run":
        raise UserError(
            f"{run_dir} holds a run of `iwr {front}`: continue it with `iwr {front} ... --resume`"
        )
    stored = manifest.get("config")
    if not isinstance(stored, dict):
        raise UserError(f"{run_dir}: the run's manifest has no config; it cannot be resumed")
    config = parse_run_config(stored, f"{run_dir} manifest")  # pyright: ignore[reportUnknownArgumentType]
    judges = manifest.get("judges")
    designs = judges.get("designs", {}) if isinstance(judges, dict) else {}  # pyright: ignore[reportUnknownMemberType]
    extra = plugin_refs(plugins or [], Path.cwd())
    kept = reload_recorded(config.plugins, extra, designs)  # pyright: ignore[reportUnknownArgumentType]
    return config.model_copy(update={"plugins": kept})


def cmd_run(args: argparse.Namespace) -> int:
    """Run or resume; exit 0 only when the run completed.

    SIGTERM stops a run like Ctrl-C (resumable, exit 130); before the run has started it leaves
    no run folder behind; once the run completed, either signal exits 0.
    """
    with _terminate_as_interrupt():
        config = None if args.resume else build_config(args)
        run_dir: Path = args.resume or _run_dir(args, config or RunConfig())
        lock = RunLock(run_dir).acquire()  # a second process on this folder stops here, in one line
        try:
            if config is None:
                config = _resumed_config(run_dir, args.plugin)
                update = _backend(args, config.backend.model_dump())
                config = config.model_copy(update={"backend": config.backend.model_validate(update)})
            if not args.resume and (run_dir / STORE_NAME).exists():
                raise UserError(
                    f"{run_dir} already holds a run: continue it with `iwr run --resume {run_dir}`"
                )
            engine = Engine(
                config, run_dir, resume=bool(args.resume), retry_failed=args.retry_failed, lock=lock
            )
            try:
                engine.prepare()
                if args.tui:
                    from iwr_bench.tui.app import run_tui

                    outcome = run_tui(engine)
                else:
                    outcome = _run_plain(engine, quiet=args.quiet or args.json)
            except KeyboardInterrupt:
                if not args.resume:
                    _discard_unstarted(engine, lock)
                raise
            if outcome.status == "completed":
                _exit_zero_on_stop()
            return _finish(engine, outcome, as_json=args.json, quiet=args.quiet)
        finally:
            lock.release()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    raise KeyboardInterrupt


@contextlib.contextmanager
def _terminate_as_interrupt() -> Generator[None]:
    """SIGTERM raises KeyboardInterrupt while ``iwr run`` prepares (the engine watches both while it runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is _interrupt:
            signal.signal(signal.SIGTERM, previous)


def _exit_quietly(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(0)


def _is_cli_process() -> bool:
    """Whether this process is the ``iwr`` command (not a host that called ``main`` in-process)."""
    main = sys.modules.get("__main__")
    return getattr(main, "__package__", None) == "iwr_bench" or Path(sys.argv[0]).name == "iwr"


def _exit_zero_on_stop() -> None:
    """The run completed and is stored: from now on SIGTERM and SIGINT end the process with 0."""
    if threading.current_thread() is threading.main_thread() and _is_cli_process():
        handler: Callable[[int, FrameType | None], None] = _exit_quietly
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)


def _discard_unstarted(engine: Engine, lock: RunLock) -> None:
    """Interrupted before the run started (no manifest yet): leave no half-created run behind."""
    store = engine.store
    started = store is not None and bool(store.manifest())
    if store is not None:
        store.close()
        engine.store = None
    if started:
        return
    if lock.created_dir:
        lock.release(remove_dir_if_empty=False)
        shutil.rmtree(engine.run_dir, ignore_errors=True)
        return
    for suffix in ("", "-wal", "-shm"):
        (engine.run_dir / f"{STORE_NAME}{suffix}").unlink(missing_ok=True)


def _run_plain(engine: Engine, *, quiet: bool) -> RunOutcome:
    progress: LiveProgress | PlainProgress | None
    if quiet:
        progress = None
    elif sys.stderr.isatty():
        progress = LiveProgress()
    else:
        progress = PlainProgress()
    if progress is None:
        return anyio.run(engine.run)
    engine.bus.subscribe(progress)
    with progress:
        return anyio.run(engine.run)


def _finish(engine: Engine, outcome: RunOutcome, *, as_json: bool, quiet: bool) -> int:
    assert engine.store is not None
    summary = run_summary(engine.store)
    summary["run_dir"] = str(outcome.run_dir)
    summary["wall_s"] = round(outcome.wall_s, 3)
    summary["work"] = work_split(outcome)
    if as_json:
        print(json.dumps(summary, indent=2))
    elif not quiet:
        print_summary(summary)
        print(work_line(summary["work"]))
    if outcome.status == "completed":
        print(f"run completed in {outcome.wall_s:.1f} s: {outcome.run_dir}", file=sys.stderr)
        return 0
    if outcome.status == "cancelled":
        print(f"run stopped; continue it with: iwr run --resume {outcome.run_dir}", file=sys.stderr)
        return 130
    print(
        f"run failed ({outcome.message}); continue it with: iwr run --resume {outcome.run_dir}",
        file=sys.stderr,
    )
    return 1


def work_split(outcome: RunOutcome) -> dict[str, Any]:
    """This session's work clock: each stage's busy time, the engine's overhead, each limit's idle time."""
    return {
        "busy_s": dict(outcome.work_s),
        "overhead_s": round(outcome.overhead_s, 3),
        "limit_idle_s": dict(outcome.limit_idle_s),
    }


def work_line(work: dict[str, Any]) -> str:
    """The work clock in two short lines (seconds)."""
    busy = ", ".join(f"{k} {v:.1f}" for k, v in work["busy_s"].items())
    idle = ", ".join(f"{k} {v:.1f}" for k, v in work["limit_idle_s"].items())
    return f"busy s: {busy}; engine overhead {work['overhead_s']:.1f}\nidle s: {idle}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


_COLUMNS = ("model", "judged", "IFS", "IFS micro", "LVS", "HVS", "VFS", "Final", "failures", "undet.", "cost")


def _percent(share: float | None) -> str:
    """A 0-1 share as a whole percentage ("-" when there is none)."""
    return "-" if share is None else f"{100 * share:.0f}%"


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """The per-model table (x100), failure counts and undetermined assertion rate; names are never cut."""
    table = Table(title=f"iwr run: {summary.get('run_dir', '')} (x100)")
    for col in _COLUMNS:
        table.add_column(col, justify="left" if col == "model" else "right", overflow="fold")
    lvs_only = False
    for name, m in summary["models"].items():
        lvs_only |= bool(m["lvs_only"])
        fails = ", ".join(f"{k} {v}" for k, v in sorted(m["failures"].items())) or "0"
        table.add_row(
            name,
            f"{m['judged']}/{m['tasks']}",
            _num(m["ifs"]),
            _num(m["ifs_micro"]),
            _num(m["lvs"]),
            _num(m["hvs"]),
            _num(m["vfs"]),
            _num(m["final"]),
            fails,
            _percent(m.get("undetermined")),
            f"${m['cost_usd']:.4f}",
        )
    console = console or (Console() if sys.stdout.isatty() else Console(width=140))
    console.print(table)
    skipped = int(summary.get("skipped_records") or 0)
    if skipped:
        console.print(
            f"{skipped} task record(s) could not be read and were skipped (--skip-invalid); "
            "the means are over the tasks that were read"
        )
    _print_protocol_notes(console, summary)
    if lvs_only:
        console.print(
            "HVS unavailable (no rubric judge): VFS and Final use LVS alone and are not paper-comparable."
        )
    for line in substitute_lines(summary):
        console.print(line)


def _print_protocol_notes(console: Console, summary: dict[str, Any]) -> None:
    """Protocol label, tasks left out and a missing HVS counted 0 (official protocol)."""
    models = list(summary["models"].values())
    protocol = next((str(m.get("protocol", "default")) for m in models), "default")
    console.print(f"protocol: {protocol}")
    for name, m in summary["models"].items():
        if m.get("left_out"):
            console.print(
                f"{name}: {m['left_out']} task(s) without index.html left out of the means (official)"
            )
    if protocol == "official" and any(m.get("hvs_missing") for m in models):
        console.print("HVS missing, counted 0 as the official aggregation does")


def cmd_runs_show(args: argparse.Namespace) -> int:
    """Print a run's manifest, status and summary."""
    store = RunStore.open_run(args.run_dir, readonly=True)
    try:
        manifest = store.manifest()
        summary = run_summary(store)
        jobs = store.jobs()
    finally:
        store.close()
    counts: dict[str, int] = {}
    for j in jobs:
        counts[f"{j.stage}:{j.status}"] = counts.get(f"{j.stage}:{j.status}", 0) + 1
    if args.json:
        print(
            json.dumps({"manifest": manifest, "summary": summary, "jobs": counts}, indent=2, sort_keys=True)
        )
        return 0
    console = Console()
    console.print(f"[bold]{args.run_dir}[/bold]  status: {summary['status']}")
    console.print("jobs: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for key in (
        "created",
        "tasks_source",
        "task_ids",
        "models",
        "python",
        "os",
        "chromium",
        "policies",
        "judges",
    ):
        if key in manifest:
            console.print(f"{key}: {json.dumps(manifest[key])}")
    console.print("packages: " + ", ".join(f"{k} {v}" for k, v in manifest.get("packages", {}).items()))
    for b in manifest.get("metric_backends", []):
        sub = " (substitute)" if b.get("substitute") else ""
        console.print(f"metric {b['metric']}: {b.get('model') or b.get('engine')} on {b.get('device')}{sub}")
    summary["run_dir"] = str(args.run_dir)
    print_summary(summary)
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    """Attach the terminal UI to a run folder; it waits for a run that has not started yet."""
    run_dir: Path = args.run_dir
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a folder")
    from iwr_bench.tui.app import watch

    watch(run_dir)
    return 0
