"""The ``iwr tasks`` commands, run in-process through the real argument parser."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from iwr_bench.cli import main


def test_validate_ok_and_failing(tasks_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "validate", str(tasks_root)]) == 0
    assert "2 task(s) read, 2 valid; 0 error(s), 0 warning(s)" in capsys.readouterr().out

    (tasks_root / "data/2/video.mp4").unlink()
    jsonl = tasks_root / "data.jsonl"
    jsonl.write_text(jsonl.read_text() + "{oops\n")
    assert main(["tasks", "validate", str(tasks_root)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("error   task ? (line 3) json: ")
    assert out[1].startswith("error   task 2 (line 2) video.mp4: ")
    assert out[-1].endswith("2 task(s) read, 1 valid; 2 error(s), 0 warning(s)")


def test_validate_strict_and_json(tasks_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tasks_root / "data/1/assets/009.png").write_bytes((tasks_root / "data/1/assets/001.png").read_bytes())
    assert main(["tasks", "validate", str(tasks_root)]) == 0
    assert main(["tasks", "validate", "--strict", str(tasks_root)]) == 1
    capsys.readouterr()
    assert main(["tasks", "validate", "--json", str(tasks_root)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["field"] == "assets/009.png"


def test_list_table_and_totals(tasks_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "list", str(tasks_root)]) == 0
    out = capsys.readouterr().out
    assert "2 tasks" in out
    assert "actions: 5 (Click 5); visually flagged 5 (100%); with assertions 2 (40%)" in out
    assert main(["tasks", "list", "--json", str(tasks_root / "data" / "2")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["tasks"] == 1 and data["tasks"][0]["actions"] == 3


def test_round_trip_load_validate_list(pristine_tasks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fixture in the official layout goes through every command unchanged."""
    before = {p: p.read_bytes() for p in pristine_tasks.rglob("*") if p.is_file()}
    assert main(["tasks", "validate", str(pristine_tasks)]) == 0
    assert main(["tasks", "list", "--json", str(pristine_tasks)]) == 0
    totals = json.loads(capsys.readouterr().out.split("\n", 1)[1])["totals"]
    assert (totals["tasks"], totals["actions"], totals["flagged"], totals["assertions"]) == (2, 5, 5, 2)
    assert {p: p.read_bytes() for p in pristine_tasks.rglob("*") if p.is_file()} == before


def test_bad_path_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "list", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err == f"iwr: error: {tmp_path / 'nowhere'} does not exist\n"


@pytest.mark.timeout(30)
def test_fetch_fails_fast_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:  # a loopback port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert main(["tasks", "fetch", "--dest", str(tmp_path / "ds")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"iwr: error: cannot reach http://127.0.0.1:{port} (ConnectionRefusedError")
    assert "download the dataset elsewhere" in err
    assert not (tmp_path / "ds").exists()


def test_fetch_refuses_when_hub_offline_mode_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["tasks", "fetch", "--dest", str(tmp_path / "ds")]) == 2
    assert "HF_HUB_OFFLINE is set" in capsys.readouterr().err
