"""TUI fixtures: a recorded event stream of a finished run."""

from __future__ import annotations

import json
from pathlib import Path

from iwr_bench.engine.events import Event, parse_event

DATA = Path(__file__).with_name("data")


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
