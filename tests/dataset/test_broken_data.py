"""Broken task data is the data's fault: found before any model is called, never charged to one."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from iwr_bench.cli import main
from iwr_bench.dataset.layout import load_tasks, skipped_line
from iwr_bench.dataset.validate import data_faults


def _checkpoint(root: Path, task_id: int, step: int) -> Path:
    return root / "data" / str(task_id) / "checkpoints" / f"step_{step}.png"


def _truncate_first(root: Path) -> None:
    path = _checkpoint(root, 1, 0)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garble_second(root: Path) -> None:
    _checkpoint(root, 1, 1).write_bytes(b"\x89PNG\r\n\x1a\n not an image at all")


def _no_checkpoints(root: Path) -> None:
    folder = root / "data" / "1" / "checkpoints"
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()


def _looped_folder(root: Path) -> None:
    folder = root / "data" / "1"
    folder.rename(root / "data" / "1-gone")
    folder.symlink_to(folder)  # a link to itself


def _huge_checkpoint(root: Path) -> None:
    buffer = io.BytesIO()
    Image.new("L", (20000, 20000)).save(buffer, "PNG")  # a few hundred KB, 400 Mpx once decoded
    _checkpoint(root, 1, 1).write_bytes(buffer.getvalue())


def _fifo_checkpoint(root: Path) -> None:
    path = _checkpoint(root, 1, 1)
    path.unlink()
    os.mkfifo(path)  # reading it would wait forever


BREAKAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated step_0": (
        _truncate_first,
        "checkpoints/step_0.png: checkpoint step 0 is not a readable image",
    ),
    "garbled step_1": (_garble_second, "checkpoints/step_1.png: checkpoint step 1 is not a readable image"),
    "no checkpoints folder": (_no_checkpoints, "checkpoints: checkpoints folder is missing"),
    "symlink loop": (_looped_folder, "folder: task folder"),
    "20000x20000 checkpoint": (_huge_checkpoint, "checkpoint step 1 is too large to decode"),
    "fifo checkpoint": (_fifo_checkpoint, "checkpoints: not regular files: step_1.png"),
}


@pytest.mark.parametrize("case", list(BREAKAGES))
def test_a_broken_task_stops_every_command_before_any_model_is_called(
    case: str, tasks_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    breakage, expected = BREAKAGES[case]
    breakage(tasks_root)
    [task] = [t for t in load_tasks(tasks_root).tasks if t.id == 1]
    faults = data_faults(task, needs_video=False)
    assert faults and expected in faults[0].format(), [f.format() for f in faults]
    for argv in (
        ["run", "--tasks", str(tasks_root), "--model", "blank", "--out", str(tasks_root / "run")],
        ["generate", "--tasks", str(tasks_root), "--model", "blank", "--out", str(tasks_root / "pages")],
        ["judge", "--tasks", str(tasks_root), "--pages", str(tasks_root), "--out", str(tasks_root / "j")],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "1 task(s) of" in err and "broken data (1)" in err and "no model is charged" in err, err
        assert expected in err and "--skip-invalid" in err, err
    assert not (tasks_root / "run").exists() and not (tasks_root / "pages").exists()
    # the validator says the same, in one line, without a traceback and without blocking
    assert main(["tasks", "validate", str(tasks_root)]) == 1
    out = capsys.readouterr().out
    assert expected.split(": ", 1)[-1] in out and "Traceback" not in out


@pytest.mark.browser
def test_with_skip_invalid_a_broken_task_is_left_out_of_the_means_and_counted(
    tasks_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _truncate_first(tasks_root)
    run = tasks_root / "run"
    argv = ["run", "--tasks", str(tasks_root), "--model", "blank", "--out", str(run)]
    assert main([*argv, "--skip-invalid", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["skipped_records"] == 1
    blank = summary["models"]["blank"]
    assert blank["tasks"] == 1 and blank["judged"] == 1  # task 2 only: no 0 for task 1 in the mean
    assert main(["runs", "show", str(run)]) == 0
    assert skipped_line(1) in capsys.readouterr().out


def _rewrite(root: Path, edit: Callable[[list[str]], list[str]]) -> Path:
    jsonl = root / "data.jsonl"
    jsonl.write_text("\n".join(edit(jsonl.read_text().split("\n")[:-1])) + "\n")
    return jsonl


def test_a_line_separator_inside_a_string_does_not_split_a_record(tasks_root: Path) -> None:
    def add(lines: list[str]) -> list[str]:
        record = json.loads(lines[0])
        record["action_sequence"][0]["parameters"]["description"] += "\u2028second line\u2029"
        return [json.dumps(record, ensure_ascii=False), *lines[1:]]

    _rewrite(tasks_root, add)
    loaded = load_tasks(tasks_root)
    assert loaded.problems == [] and [t.id for t in loaded.tasks] == [1, 2]
    assert "\u2028second line" in loaded.tasks[0].record.action_sequence[0].parameters.description


@pytest.mark.parametrize(
    ("value", "message"),
    [("true", "integer"), (str(2**63), "less than or equal to"), ('"12"', "integer"), ("-1", "greater than")],
)
def test_ids_are_bounded_whole_numbers(tasks_root: Path, value: str, message: str) -> None:
    _rewrite(tasks_root, lambda lines: [lines[0].replace('"id": 1', f'"id": {value}', 1), lines[1]])
    loaded = load_tasks(tasks_root)
    assert [t.id for t in loaded.tasks] == [2]
    [problem] = loaded.problems
    assert problem.field == "id" and message in problem.message and problem.line == 1


def test_a_duplicate_id_stops_the_run_before_work_and_is_never_counted_twice(
    tasks_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _rewrite(tasks_root, lambda lines: [*lines, lines[1]])
    loaded = load_tasks(tasks_root)
    assert [t.id for t in loaded.tasks] == [1, 2]
    [problem] = loaded.problems
    assert (problem.line, problem.message) == (3, "duplicate id 2 (first on line 2); line not used")
    argv = ["run", "--tasks", str(tasks_root), "--model", "blank", "--out", str(tasks_root / "run")]
    assert main(argv) == 2
    assert "line 3: id: duplicate id 2" in capsys.readouterr().err
    assert not (tasks_root / "run").exists()


def test_a_fifo_task_file_is_refused_not_waited_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "data.jsonl"
    os.mkfifo(fifo)
    assert main(["tasks", "validate", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert main(["run", "--tasks", str(fifo), "--model", "blank", "--out", str(tmp_path / "run")]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert main(["tasks", "validate", str(tmp_path)]) == 2  # as the dataset root's data.jsonl
    assert "data.jsonl: not a regular file" in capsys.readouterr().err


def test_an_empty_only_is_refused(tasks_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("run", "generate"):
        argv = [
            command,
            "--tasks",
            str(tasks_root),
            "--model",
            "blank",
            "--only",
            "",
            "--out",
            str(tasks_root / "o"),
        ]
        assert main(argv) == 2
        assert "--only names no task id" in capsys.readouterr().err
