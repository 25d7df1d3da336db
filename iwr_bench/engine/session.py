"""What a run's manifest records, and how a resumed session is checked against it.

The manifest says what a run used (versions, settings, seeds, tasks, designs and their code); each
session adds an entry. A resume is refused when the tasks or models changed, or (unless accepted)
when a judge design's code changed since the last session.
"""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from typing import Any

from iwr_bench.dataset.frames import DEFAULT_FPS, DEFAULT_FRAME_CAP
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.jobs import record_digest
from iwr_bench.engine.judges import describe_sets
from iwr_bench.engine.prepared import PreparedRun
from iwr_bench.engine.setup import chromium_version, effective_policies, package_versions
from iwr_bench.engine.store import RunStore
from iwr_bench.errors import UserError
from iwr_bench.official_code import prompt_label
from iwr_bench.protocol import EvalProtocol
from iwr_bench.scoring.evaluation import VisualMetrics
from iwr_bench.tools.jail import containment_level
from iwr_bench.tools.pool import PoolConfig


def run_manifest(
    cfg: RunConfig, run: PreparedRun, pool: PoolConfig, metrics: VisualMetrics | None
) -> dict[str, Any]:
    """What the run used: versions, settings, seeds, sampling, backends, judges (what
    :func:`~iwr_bench.engine.judges.describe_sets` says of the run's judge sets), policies, and the
    authors' checkout the run read (as loaded at start-up)."""
    tasks, source, skipped, official = run.tasks, run.task_source, run.skipped, run.official
    return {
        "config": cfg.model_dump(mode="json"),
        "tasks_source": str(source),
        "task_ids": [t.id for t in tasks],
        "skipped_records": skipped,
        "task_digests": {str(t.id): record_digest(t) for t in tasks},
        "models": cfg.model_slugs,
        "model_tasks": cfg.model_tasks([t.id for t in tasks]),
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "os": platform.platform(),
        "chromium": chromium_version(),
        "browser": {
            "settle": pool.settle.model_dump(mode="json"),
            "determinism": pool.determinism.model_dump(mode="json"),
            "limits": pool.limits.model_dump(mode="json"),
            "isolation": pool.isolation,
            "containment": containment_level(),
        },
        "frame_sampling": {"fps": DEFAULT_FPS, "frame_cap": DEFAULT_FRAME_CAP},
        "generation": run.factory.manifest(),
        "prompts": prompt_label(cfg.official_code) if cfg.protocol is EvalProtocol.official else "own",
        "official_code": official.manifest() if official is not None else None,
        "metric_backends": []
        if metrics is None
        else [m.backend.model_dump() for m in (metrics.ocr, metrics.dino)],
        "judges": describe_sets(run.judge_sets),
        "judge_labels": [label for label in cfg.judge.labels() if label],
        "policies": effective_policies(cfg),
    }


def session_entry(session: int, started: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest's record of one session: when it started and where its work ran.

    ``backend`` at the manifest's top level is the first session's; a resumed session may run on
    another backend (``iwr run --resume RUN --backend ray``), so each session records its own.
    """
    return {
        "session": session,
        "started": started,
        "backend": manifest.get("backend"),
        "designs": _designs(manifest),
    }


def _designs(manifest: dict[str, Any]) -> dict[str, Any]:
    """The judge designs a manifest records, by role (name, origin, digest of a file's code)."""
    judges = manifest.get("judges")
    designs = judges.get("designs") if isinstance(judges, dict) else None  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
    return dict(designs) if isinstance(designs, dict) else {}  # pyright: ignore[reportUnknownArgumentType]


def _code_of(record: Any) -> tuple[Any, ...]:
    """What identifies a design's code: its origin, and the file's digest or the version."""
    if not isinstance(record, dict):
        return ()
    keys = ("name", "kind", "module", "path", "sha256", "distribution", "version")
    return tuple(record.get(k) for k in keys)  # pyright: ignore[reportUnknownMemberType]


def _describe_code(record: dict[str, Any]) -> str:
    kind = record.get("kind", "?")
    if kind == "file":
        return f"file {record.get('path')} (sha256 {str(record.get('sha256'))[:12]})"
    if kind == "builtin":
        return "built in"
    version = record.get("version")
    return f"{kind} {record.get('module')}" + (f" {version}" if version else "")


def changed_designs(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The judge designs whose code differs from the last session's (a file edited, another origin
    or version), one line each; ``old`` is the stored manifest, ``new`` this session's."""
    sessions = session_history(old)
    before = next((s["designs"] for s in reversed(sessions) if isinstance(s.get("designs"), dict)), None)
    before = before if before is not None else _designs(old)
    lines: list[str] = []
    for role, record in _designs(new).items():
        was = before.get(role)
        if isinstance(record, dict) and isinstance(was, dict) and _code_of(was) != _code_of(record):
            lines.append(
                f"{role} {record.get('name')!r}: {_describe_code(was)} is now {_describe_code(record)}"  # pyright: ignore[reportUnknownArgumentType]
            )
    return lines


def session_history(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The sessions a stored manifest records (runs created before sessions were recorded: the first)."""
    recorded = manifest.get("sessions")
    if isinstance(recorded, list):
        return [dict(s) for s in recorded if isinstance(s, dict)]  # pyright: ignore[reportUnknownArgumentType,reportUnknownVariableType]
    return [{"session": 1, "started": manifest.get("created"), "backend": manifest.get("backend")}]


def check_resumable(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Refuse to continue a run whose tasks or models changed since it started.

    Raises:
        UserError: naming what changed.
    """
    for key in ("task_digests", "models"):
        if old.get(key) != new.get(key):
            raise UserError(f"cannot resume: the run's {key.replace('_', ' ')} changed since it started")


def record_session(
    store: RunStore,
    manifest: dict[str, Any],
    *,
    accept_changed_plugins: bool = False,
    front_manifest: dict[str, Any] | None = None,
) -> str | None:
    """Record a session's start in the run's store: the whole manifest for a new run; for a resumed
    one, after checking it may go on, its entry in the history (and the front's part again).
    Returns the run's status before (None: a new run).

    Raises:
        UserError: the tasks or models changed, or a judge design's code changed and
            ``accept_changed_plugins`` is not set (naming the file).
    """
    previous = store.meta("status")
    session = int(store.meta("sessions") or 0) + 1
    now = datetime.now(UTC).isoformat()
    entry = session_entry(session, now, manifest)
    if previous is None:
        store.set_manifest({**manifest, "created": now, "sessions": [entry]})
    else:
        old = store.manifest()
        check_resumable(old, manifest)
        changed = changed_designs(old, manifest)
        if changed and not accept_changed_plugins:
            raise UserError(
                "cannot resume: the code of a judge design changed since the last session: "
                + "; ".join(changed)
                + " (--accept-changed-plugins goes on with the new code and records the change)"
            )
        if changed:
            entry["changed_designs"] = changed
        store.set_manifest({"sessions": [*session_history(old), entry], **(front_manifest or {})})
    store.set_meta("sessions", session)
    store.set_meta("status", "running")
    return previous
