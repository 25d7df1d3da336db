"""Event streams for the TUI tests.

Run as a script, it refreshes ``data/events.jsonl`` (and its images) from a finished run:
``python make_events.py RUN_DIR``. Times become fixed (one event every half second), streamed image
paths become small copies in ``data/`` named after the model and step, so snapshot tests do not
depend on the machine.

Imported, it builds made-up runs: :func:`judged_job` is one judging job (optionally one judge
design of several), :func:`finished_run` a whole run around such jobs, :func:`write_steps` the
screenshots they name and :func:`store_events` writes a stream into a run store, as ``iwr watch``
reads it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from iwr_bench.agents.events import ActionExecuted, ActionStarted, AssertionVerdictEvent
from iwr_bench.engine.bus import EventBus
from iwr_bench.engine.events import (
    Event,
    FromAgent,
    JobFinished,
    JobStarted,
    RunFinished,
    RunStarted,
)
from iwr_bench.engine.store import RunStore
from iwr_bench.scoring.formulas import Scores

DATA = Path(__file__).with_name("data")
START = 1_767_225_600.0  # 2026-01-01 00:00 UTC


def main(run_dir: Path) -> None:
    """Copy the run's events, normalised."""
    DATA.mkdir(exist_ok=True)
    store = RunStore.open_run(run_dir, readonly=True)
    lines: list[str] = []
    for event in store.iter_events():
        event.time = START + 0.5 * event.seq
        if hasattr(event, "seconds"):
            event.seconds = 1.0  # type: ignore[attr-defined]
        inner = event.event if isinstance(event, FromAgent) else event
        for name in ("screenshot", "checkpoint"):
            value = getattr(inner, name, None)
            if not value:
                continue
            source = Path(value) if Path(value).is_absolute() else run_dir / value
            model = event.job.split("/")[-1] if event.job and name == "screenshot" else "reference"
            target = DATA / f"{model}-{source.name}"
            with Image.open(source) as im:
                im.convert("RGB").resize((160, 90)).save(target, optimize=True)
            setattr(inner, name, target.name)
        lines.append(event.model_dump_json())
    (DATA / "events.jsonl").write_text("\n".join(lines) + "\n")
    store.close()
    print(f"{len(lines)} events -> {DATA / 'events.jsonl'}")


# -- made-up runs ----------------------------------------------------------------------------------


@dataclass
class Act:
    """One action of a made-up job: how it ended and the verdict on its assertion."""

    status: str = "ok"
    failure: str | None = None
    verdict: str | None = None


def evidence(task_id: int, model: str, design: str = "") -> str:
    """The evidence folder of a job, relative to the run folder."""
    return f"evidence/{task_id}/{model}" + (f"/{design}" if design else "")


def judged_job(task_id: int, model: str, acts: list[Act], design: str = "") -> list[Event]:
    """One judging job, ``judge/<task>/<model>[/<design>]``, with screenshots as the replay names
    them (``step_<i+1>.png`` after action ``i``; the state it met for one that failed)."""
    job = f"judge/{task_id}/{model}" + (f"/{design}" if design else "")
    folder = evidence(task_id, model, design)
    events: list[Event] = [JobStarted(job=job, stage="judge", task_id=task_id, model=model)]
    for i, act in enumerate(acts):
        events.append(
            FromAgent(
                job=job,
                event=ActionStarted(index=i, total=len(acts), type="Click", description=f"button {i + 1}"),
            )
        )
        step = i + 1 if act.status == "ok" else i
        executed = ActionExecuted(
            index=i,
            status=act.status,
            failure=act.failure,
            message=f"{act.failure} at button {i + 1}" if act.failure else "",
            screenshot=f"{folder}/step_{step}.png",
        )
        events.append(FromAgent(job=job, event=executed))
        if act.verdict is not None:
            verdict = AssertionVerdictEvent(
                index=i,
                assertion=f"button {i + 1} turns green",
                verdict=act.verdict,
                reasoning=f"judged {act.verdict}",
                judge="made-up",
            )
            events.append(FromAgent(job=job, event=verdict))
    done = sum(a.status == "ok" for a in acts)
    scores = Scores(
        ifs=done / len(acts), lvs=0.0, hvs=None, vfs=0.0, final=done / len(acts), lvs_only=True,
        total_steps=len(acts), success_steps=done,
    )  # fmt: skip
    events.append(
        JobFinished(job=job, stage="judge", task_id=task_id, model=model, status="done", scores=scores)
    )
    return events


def finished_run(models: list[str], tasks: list[int], *jobs: list[Event]) -> list[Event]:
    """A completed run: its start, each pair's generation, ``jobs``, its end; numbered and timed."""
    events: list[Event] = [RunStarted(run_id="made-up", models=models, tasks=tasks)]
    for task_id in tasks:
        for model in models:
            gen = f"gen/{task_id}/{model}"
            events.append(JobStarted(job=gen, stage="gen", task_id=task_id, model=model))
            events.append(JobFinished(job=gen, stage="gen", task_id=task_id, model=model, status="done"))
    events.extend(e for job in jobs for e in job)
    events.append(RunFinished(status="completed", wall_s=1.0))
    for seq, event in enumerate(events, 1):
        event.seq, event.time = seq, START + 0.5 * seq
    return events


def write_steps(run_dir: Path, folder: str, count: int) -> None:
    """Screenshots ``step_0.png`` to ``step_<count>.png`` in ``run_dir/folder``, each its own colour."""
    target = run_dir / folder
    target.mkdir(parents=True, exist_ok=True)
    for i in range(count + 1):
        Image.new("RGB", (32, 18), (40 * i % 256, 200, 255 - 40 * i % 256)).save(target / f"step_{i}.png")


def store_events(run_dir: Path, events: list[Event]) -> None:
    """Write ``events`` into the run store of ``run_dir``, as the engine's bus does."""
    store = RunStore.open_run(run_dir)
    bus = EventBus(store)
    for event in events:
        bus.publish(event)
    store.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
