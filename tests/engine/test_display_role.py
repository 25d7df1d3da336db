"""Displays are a registered role, and every built-in display folds the stream with one RunState."""

from __future__ import annotations

import contextlib
import io
import textwrap
from pathlib import Path

import pytest

from iwr_bench import registry
from iwr_bench.cli import main
from iwr_bench.engine.events import Event, FromAgent, parse_event
from iwr_bench.engine.progress import LiveProgress, PlainProgress
from iwr_bench.engine.run_state import RunState
from iwr_bench.engine.store import RunStore
from iwr_bench.tui.display import TuiDisplay

PLUGIN = '''
import json
from pathlib import Path

from iwr_bench.plugins import EventDisplay, register


class JsonLines(EventDisplay):
    """Writes every event as a JSON line."""

    def __init__(self, path):
        self.path = Path(path)
        self.lines = []
        self.opened = self.closed = False

    def __call__(self, event):
        self.lines.append(event.model_dump_json())

    def __enter__(self):
        self.opened = True
        return self

    def __exit__(self, *exc):
        self.closed = True
        self.path.write_text("\\n".join(self.lines) + "\\n")


class NoDrive:
    def __call__(self, event):
        pass


@register("display", "test-jsonl")
def jsonl(path="events.jsonl"):
    """Every event as a JSON line."""
    return JsonLines(path)


@register("display", "test-nodrive")
def nodrive():
    """Cannot run the engine."""
    return NoDrive()
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    file = tmp_path / "displays.py"
    file.write_text(textwrap.dedent(PLUGIN))
    registry.load_plugins([str(file)])
    monkeypatch.chdir(tmp_path)  # the plugin display writes events.jsonl here
    return file


def test_a_plugin_display_sees_every_event_of_the_run(
    plugin: Path, tasks_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "pages"
    argv = ["generate", "--tasks", str(tasks_root), "--out", str(out), "--model", "blank"]
    assert main([*argv, "--display", "test-jsonl"]) == 0
    shown = [parse_event(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    with RunStore.open_run(out, readonly=True) as store:
        stored = list(store.iter_events())
    assert [e.seq for e in shown] == [e.seq for e in stored] and shown[0].kind == "run_started"
    assert shown[-1].kind == "run_finished"
    assert "registered display" in _help("generate")


def _help(command: str) -> str:
    out = io.StringIO()
    with pytest.raises(SystemExit), contextlib.redirect_stdout(out):
        main([command, "--help"])
    return out.getvalue()


def test_an_unknown_display_or_one_that_cannot_drive_fails_in_one_line(
    plugin: Path, tasks_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["generate", "--tasks", str(tasks_root), "--out", str(tmp_path / "pages"), "--model", "blank"]
    assert main([*argv, "--display", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("iwr: error: unknown display 'nope' (known: ") and "plain" in err and "tui" in err
    assert len(err.splitlines()) == 1
    assert main([*argv, "--display", "test-nodrive"]) == 2
    err = capsys.readouterr().err.strip()
    assert "display 'test-nodrive' (file " in err and "it has no drive" in err
    assert len(err.splitlines()) == 1


def test_the_built_in_displays_are_registered() -> None:
    assert {"live", "plain", "tui"} <= set(registry.names("display"))
    assert isinstance(registry.build("display", "tui")[0], TuiDisplay)


def _stream() -> list[Event]:
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "tui"))
    from make_events import Act, finished_run, judged_job  # pyright: ignore[reportMissingImports]

    return finished_run(
        ["good", "bad"],
        [1],
        judged_job(1, "good", [Act(), Act(verdict="yes")]),
        judged_job(1, "bad", [Act(), Act("failed", "element_not_found")]),
    )


def test_every_display_folds_the_stream_with_one_run_state() -> None:
    """The plain lines, the live table and the TUI read the same fold, so they agree."""
    events = _stream()
    assert any(isinstance(e, FromAgent) for e in events)
    plain, live, tui = PlainProgress(io.StringIO()), LiveProgress(), TuiDisplay()
    for display in (plain, live, tui):
        for event in events:
            display(event)
    reference = RunState()
    for event in events:
        reference.apply(event)
    for state in (plain.state, live.state, tui.state):
        assert type(state) is RunState
        assert {
            m: (v.generated, v.judged, v.total, v.scores, v.mistakes) for m, v in state.models.items()
        } == {m: (v.generated, v.judged, v.total, v.scores, v.mistakes) for m, v in reference.models.items()}
    assert reference.models["bad"].mistakes == {"element_not_found": 1}
    lines = plain.stream.getvalue().splitlines()  # type: ignore[attr-defined]
    assert "[good] task 1 judged: 2/2 actions, Final 100.0  [1/1 judged]" in lines
    assert "[bad] task 1 judged: 1/2 actions, Final 50.0  [1/1 judged]" in lines
