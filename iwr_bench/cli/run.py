"""``iwr run``: the main command (build or resume a run, drive it, print its table)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from iwr_bench.cli._common import (
    Subparsers,
    add_accept_changed,
    add_display,
    add_skip_invalid,
    drive,
    pick_display,
)
from iwr_bench.cli.options import (
    add_budget_option,
    add_judge_options,
    add_limit_options,
    add_metric_options,
    add_plugin_option,
    add_protocol_options,
    apply_options,
    check_options,
    defaults,
    model_entries,
)
from iwr_bench.cli.signals import exit_zero_on_stop, terminate_as_interrupt
from iwr_bench.engine.config import RunConfig, load_run_config, parse_run_config, plugin_refs
from iwr_bench.engine.lock import RunLock
from iwr_bench.engine.progress import Display
from iwr_bench.engine.run import Engine, RunOutcome, run_summary
from iwr_bench.engine.store import STORE_NAME, RunStore
from iwr_bench.errors import UserError
from iwr_bench.registry import reload_recorded
from iwr_bench.report.run_table import print_summary, work_line, work_split


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
    add_accept_changed(p)
    add_plugin_option(p)
    add_judge_options(p)
    add_limit_options(p)
    add_metric_options(p)
    add_budget_option(p)
    add_protocol_options(
        p,
        protocol_help="evaluation protocol: this project's (default) or the official scripts' rules",
        prompt_file=True,
        settle=True,
    )
    add_skip_invalid(p)
    p.add_argument(
        "--backend",
        metavar="NAME",
        help="where replay and metrics run: in-process, ray, or a backend a plugin registers "
        f"(default {defaults().backend.kind})",
    )
    p.add_argument("--address", metavar="HOST:PORT", help="with --backend ray: join this Ray cluster")
    add_display(p, "watch the run in the terminal UI")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--quiet", action="store_true", help="no progress, only the final line")
    out.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.set_defaults(func=cmd_run)


def build_config(args: argparse.Namespace) -> RunConfig:
    """The run config: the run file (if any), then the command-line options over it.

    Raises:
        UserError: a bad run file or option.
    """
    check_options(args)
    base = load_run_config(args.config) if args.config else RunConfig()
    data: dict[str, Any] = base.model_dump(mode="json")
    # A model keeps only the settings its table gave: the official preset fills the others.
    data["models"] = [m.model_dump(mode="json", exclude_unset=True) for m in base.models]
    if args.model:
        data["models"] = model_entries(args.model, base.models)
    data = apply_options(args, data)
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


def _resumed_config(run_dir: Path, plugins: list[str] | None = None, backend: str | None = None) -> RunConfig:
    """The stored run's config, its plugins loaded again and its designs checked (the backend's too,
    unless ``backend``, the one ``--backend`` names, replaces it)."""
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
    designs = dict(judges.get("designs", {})) if isinstance(judges, dict) else {}  # pyright: ignore[reportUnknownMemberType,reportUnknownArgumentType]
    recorded = manifest.get("backend")
    design = recorded.get("design") if isinstance(recorded, dict) else None  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
    if isinstance(design, dict) and not backend:
        designs["backend"] = design
    extra = plugin_refs(plugins or [], Path.cwd())
    kept = reload_recorded(config.plugins, extra, designs)  # pyright: ignore[reportUnknownArgumentType]
    return config.model_copy(update={"plugins": kept})


def cmd_run(args: argparse.Namespace) -> int:
    """Run or resume; exit 0 only when the run completed.

    SIGTERM stops a run like Ctrl-C (resumable, exit 130); before the run has started it leaves
    no run folder behind; once the run completed, either signal exits 0.
    """
    with terminate_as_interrupt():
        config = None if args.resume else build_config(args)

        def chosen_display(cfg: RunConfig) -> Display | None:
            return pick_display(args.display, quiet=args.quiet or args.json, plugins=cfg.plugins)

        display = None if config is None else chosen_display(config)  # a new run: before its folder
        run_dir: Path = args.resume or _run_dir(args, config or RunConfig())
        lock = RunLock(run_dir).acquire()  # a second process on this folder stops here, in one line
        try:
            if config is None:
                config = _resumed_config(run_dir, args.plugin, args.backend)
                update = _backend(args, config.backend.model_dump())
                config = config.model_copy(update={"backend": config.backend.model_validate(update)})
                if args.no_judge_cache:  # a session setting: what is asked, not what it means
                    judge = config.judge.model_copy(update={"cache": False})
                    config = config.model_copy(update={"judge": judge})
                display = chosen_display(config)
            if not args.resume and (run_dir / STORE_NAME).exists():
                raise UserError(
                    f"{run_dir} already holds a run: continue it with `iwr run --resume {run_dir}`"
                )
            engine = Engine(
                config,
                run_dir,
                resume=bool(args.resume),
                retry_failed=args.retry_failed,
                lock=lock,
                accept_changed_plugins=args.accept_changed_plugins,
            )
            try:
                engine.prepare()
                outcome = drive(engine, display)
            except KeyboardInterrupt:
                if not args.resume:
                    _discard_unstarted(engine, lock)
                raise
            if outcome.status == "completed":
                exit_zero_on_stop()
            return _finish(engine, outcome, as_json=args.json, quiet=args.quiet)
        finally:
            lock.release()


def _discard_unstarted(engine: Engine, lock: RunLock) -> None:
    """Interrupted before the run started (no manifest yet): leave no half-created run behind."""
    store = engine.prepared.store if engine.prepared is not None else None
    started = store is not None and bool(store.manifest())
    if store is not None:
        store.close()
        engine.prepared = None
    if started:
        return
    if lock.created_dir:
        lock.release(remove_dir_if_empty=False)
        shutil.rmtree(engine.run_dir, ignore_errors=True)
        return
    for suffix in ("", "-wal", "-shm"):
        (engine.run_dir / f"{STORE_NAME}{suffix}").unlink(missing_ok=True)


def _finish(engine: Engine, outcome: RunOutcome, *, as_json: bool, quiet: bool) -> int:
    assert engine.prepared is not None
    summary = run_summary(engine.prepared.store)
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
