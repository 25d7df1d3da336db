"""TUI fixtures: one small finished run per session (task 102, the three baselines)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iwr_bench.cli import main
from iwr_bench.engine.events import Event, parse_event

DATA = Path(__file__).with_name("data")


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory, session_cache: Path) -> Path:
    """A completed offline run of task 102 (oracle, screenshot, blank)."""
    run = tmp_path_factory.mktemp("tui") / "run-102"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IWR_BENCH_CACHE_DIR", str(session_cache))
        assert main(["run", "--only", "102", "--out", str(run), "--quiet"]) == 0
    return run


def recorded_events() -> list[Event]:
    """The committed event stream of a finished run (times and image paths made fixed)."""
    lines = (DATA / "events.jsonl").read_text().splitlines()
    events = [parse_event(line) for line in lines if line.strip()]
    for event in events:
        for name in ("screenshot", "checkpoint"):
            value = getattr(event, name, None)
            if value:
                setattr(event, name, str(DATA / Path(value).name))
    return events


def save_events(events: list[Event], path: Path) -> None:
    """Write events as JSON lines (used to refresh ``data/events.jsonl``)."""
    path.write_text("".join(json.dumps(e.model_dump(mode="json")) + "\n" for e in events))
