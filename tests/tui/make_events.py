"""Refresh ``data/events.jsonl`` (and its images) from a finished run: ``python make_events.py RUN_DIR``.

Times become fixed (one event every half second), streamed image paths become small copies in
``data/`` named after the model and step, so snapshot tests do not depend on the machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

from iwr_bench.engine.store import RunStore

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
        for name in ("screenshot", "checkpoint"):
            value = getattr(event, name, None)
            if not value:
                continue
            source = Path(value) if Path(value).is_absolute() else run_dir / value
            model = event.job.split("/")[-1] if event.job and name == "screenshot" else "reference"
            target = DATA / f"{model}-{source.name}"
            with Image.open(source) as im:
                im.convert("RGB").resize((160, 90)).save(target, optimize=True)
            setattr(event, name, target.name)
        lines.append(event.model_dump_json())
    (DATA / "events.jsonl").write_text("\n".join(lines) + "\n")
    store.close()
    print(f"{len(lines)} events -> {DATA / 'events.jsonl'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
