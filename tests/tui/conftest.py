"""TUI fixtures: a recorded event stream of a finished run."""

from __future__ import annotations

import json
from pathlib import Path

from textual.app import App
from textual.geometry import Region

from iwr_bench.engine.events import Event, FromAgent, parse_event

DATA = Path(__file__).with_name("data")


def recorded_events() -> list[Event]:
    """The committed event stream of a finished run (times and image paths made fixed)."""
    lines = (DATA / "events.jsonl").read_text().splitlines()
    events = [parse_event(line) for line in lines if line.strip()]
    for event in events:
        inner = event.event if isinstance(event, FromAgent) else event
        for name in ("screenshot", "checkpoint"):
            value = getattr(inner, name, None)
            if value:
                setattr(inner, name, str(DATA / Path(value).name))
    return events


def save_events(events: list[Event], path: Path) -> None:
    """Write events as JSON lines (used to refresh ``data/events.jsonl``)."""
    path.write_text("".join(json.dumps(e.model_dump(mode="json")) + "\n" for e in events))


def screen_lines(app: App[None]) -> list[str]:
    """What the terminal shows now, line by line (the dialog over the screen under it, if any)."""
    strips = app.screen._compositor.render_strips()  # pyright: ignore[reportPrivateUsage]
    return ["".join(segment.text for segment in strip) for strip in strips]


def region_text(app: App[None], region: Region) -> str:
    """The text shown in ``region`` of the terminal, its lines joined by spaces."""
    lines = screen_lines(app)[region.y : region.bottom]
    return " ".join(line[region.x : region.right].strip() for line in lines)
