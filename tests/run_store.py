"""Reading a run's store from a test: scores as reported, and how many jobs of a stage are done."""

from __future__ import annotations

from pathlib import Path

from iwr_bench.engine.store import RunStore


def reported_scores(run_dir: Path) -> dict[str, tuple[float, ...]]:
    """Per judging job: success steps, IFS, LVS, VFS and Final as reported (x100, two decimals)."""
    with RunStore.open_run(run_dir, readonly=True) as store:
        return {
            s.job: tuple(round(100 * v, 2) for v in (s.success_steps, s.ifs, s.lvs, s.vfs, s.final))
            for s in store.scores()
        }


def done_jobs(run_dir: Path, stage: str = "judge") -> int:
    """Jobs of ``stage`` done so far in a run another process writes (0 while its store is not readable)."""
    if not (run_dir / "run.sqlite").exists():
        return 0
    try:
        store = RunStore.open_run(run_dir, readonly=True)
    except Exception:
        return 0
    try:
        return sum(j.status == "done" for j in store.jobs(stage))
    except Exception:
        return 0
    finally:
        store.close()
